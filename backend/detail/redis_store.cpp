#include "backend/detail/redis_store.hpp"

#include <algorithm>
#include <chrono>
#include <thread>

#include <hiredis/hiredis.h>

#include "backend/error.hpp"

namespace twinscale::backend::detail {

namespace {

double steady_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Reply {
  redisReply* r;
  ~Reply() {
    if (r) freeReplyObject(r);
  }
};

} // namespace

RedisStore::RedisStore(const std::string& host, int port, double timeout_s)
    : address_(host + ":" + std::to_string(port)), timeout_s_(timeout_s) {
  timeval tv{};
  const double connect_s = std::min(timeout_s, 10.0);
  tv.tv_sec = static_cast<time_t>(connect_s);
  tv.tv_usec = static_cast<suseconds_t>((connect_s - static_cast<double>(tv.tv_sec)) * 1e6);
  ctx_ = redisConnectWithTimeout(host.c_str(), port, tv);
  if (!ctx_ || ctx_->err) {
    const std::string why = ctx_ ? ctx_->errstr : "out of memory";
    if (ctx_) redisFree(ctx_);
    ctx_ = nullptr;
    throw BackendError("rendezvous store redis://" + address_ + " unreachable: " + why);
  }
  redisSetTimeout(ctx_, tv);
}

RedisStore::~RedisStore() {
  if (ctx_) redisFree(ctx_);
}

void RedisStore::set(const std::string& key, const std::string& value) {
  Reply r{
      static_cast<redisReply*>(redisCommand(ctx_, "SET %b %b", key.data(), key.size(), value.data(), value.size()))};
  if (!r.r || r.r->type == REDIS_REPLY_ERROR)
    throw BackendError("rendezvous store redis://" + address_ + ": SET " + key + " failed" +
                       (r.r ? std::string(": ") + r.r->str : std::string(": ") + ctx_->errstr));
}

long long RedisStore::incr(const std::string& key) {
  Reply r{static_cast<redisReply*>(redisCommand(ctx_, "INCR %b", key.data(), key.size()))};
  if (!r.r || r.r->type != REDIS_REPLY_INTEGER)
    throw BackendError("rendezvous store redis://" + address_ + ": INCR " + key + " failed");
  return r.r->integer;
}

std::string RedisStore::get_wait(const std::string& key) {
  const double deadline = steady_s() + timeout_s_;
  double sleep_s = 50e-6;
  for (;;) {
    Reply r{static_cast<redisReply*>(redisCommand(ctx_, "GET %b", key.data(), key.size()))};
    if (!r.r || r.r->type == REDIS_REPLY_ERROR)
      throw BackendError("rendezvous store redis://" + address_ + ": GET " + key + " failed");
    if (r.r->type == REDIS_REPLY_STRING) return std::string(r.r->str, r.r->len);
    if (steady_s() > deadline)
      throw BackendError("rendezvous store redis://" + address_ + ": key " + key +
                         " did not appear within the timeout of " + std::to_string(timeout_s_) + " s");
    std::this_thread::sleep_for(std::chrono::duration<double>(sleep_s));
    sleep_s = std::min(sleep_s * 2, 5e-3);
  }
}

void RedisStore::rendezvous(const std::string& prefix, const schedules::Layout& layout, int64_t rank,
                            const std::string& identity, bool expert_groups) {
  set(prefix + ":rank:" + std::to_string(rank), identity);
  for (schedules::GroupKind kind :
       {schedules::GroupKind::Tp, schedules::GroupKind::Dp, schedules::GroupKind::Pp, schedules::GroupKind::Embedding,
        schedules::GroupKind::Ep, schedules::GroupKind::ExpertDp, schedules::GroupKind::Cp,
        schedules::GroupKind::EpNode, schedules::GroupKind::EpRail}) {
    if (!expert_groups && (kind == schedules::GroupKind::Ep || kind == schedules::GroupKind::ExpertDp)) continue;
    if ((kind == schedules::GroupKind::EpNode || kind == schedules::GroupKind::EpRail) &&
        (!expert_groups || !layout.hierarchical_ep()))
      continue;
    if (kind == schedules::GroupKind::Cp && layout.cp == 1) continue;
    const auto members = layout.group_members(kind, rank);
    if (std::find(members.begin(), members.end(), rank) == members.end()) continue;
    const std::string key =
        prefix + ":group:" + std::string(schedules::to_string(kind)) + ":" + std::to_string(members.front());
    const long long arrived = incr(key + ":arrived");
    if (arrived == static_cast<long long>(members.size())) set(key + ":ready", "1");
    get_wait(key + ":ready"); // released by the group's last member
  }
}

} // namespace twinscale::backend::detail
