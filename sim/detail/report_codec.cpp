#include "sim/detail/report_codec.hpp"

#include <cstring>
#include <type_traits>

namespace twinscale::sim::detail {

namespace {

class Writer {
public:
  template <class T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof(T));
  }
  void str(const std::string& s) {
    pod<uint64_t>(s.size());
    out_.append(s);
  }
  template <class T, class F>
  void vec(const std::vector<T>& v, F&& each) {
    pod<uint64_t>(v.size());
    for (const auto& x : v) each(x);
  }
  std::string take() { return std::move(out_); }

private:
  std::string out_;
};

class Reader {
public:
  explicit Reader(const std::string& in) : in_(in) {}
  template <class T>
  T pod() {
    T v;
    if (pos_ + sizeof(T) > in_.size()) throw SimError("simulation result truncated (child process died?)");
    std::memcpy(&v, in_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }
  std::string str() {
    const auto n = pod<uint64_t>();
    if (pos_ + n > in_.size()) throw SimError("simulation result truncated");
    std::string s = in_.substr(pos_, n);
    pos_ += n;
    return s;
  }

private:
  const std::string& in_;
  size_t pos_ = 0;
};

} // namespace

std::string encode_report(const SimReport& r) {
  Writer w;
  w.pod(r.mode);
  w.pod(r.completed);
  w.str(r.failure);
  w.pod(r.makespan_s);
  w.pod(r.iteration_time_s);
  w.pod(r.tokens_per_s);
  w.pod(r.tflops_per_gpu);
  w.pod(r.mfu);
  w.pod(r.breakdown);
  w.vec(r.per_stage, [&](const Breakdown& b) { w.pod(b); });
  w.vec(r.per_rank, [&](const RankTimes& t) { w.pod(t); });
  w.vec(r.per_rank_breakdown, [&](const Breakdown& b) { w.pod(b); });
  w.vec(r.incidents, [&](const OpIncident& i) {
    w.pod(i.rank);
    w.pod(i.op_index);
    w.str(i.name);
    w.pod(i.failed);
    w.pod(i.at_s);
    w.pod(i.stalled_s);
  });
  w.str(r.trace.source);
  w.vec(r.trace.events, [&](const schedules::TraceEvent& e) { w.pod(e); });
  w.pod(r.aggregated);
  w.pod(r.executed_ranks);
  w.pod(r.replica_classes);
  w.pod(r.ops_executed);
  w.pod(r.flows);
  w.pod(r.wall_s);
  w.vec(r.link_loads, [&](const LinkLoad& l) { w.pod(l); });
  return w.take();
}

SimReport decode_report(const std::string& bytes) {
  Reader rd(bytes);
  SimReport r;
  r.mode = rd.pod<SimMode>();
  r.completed = rd.pod<bool>();
  r.failure = rd.str();
  r.makespan_s = rd.pod<double>();
  r.iteration_time_s = rd.pod<double>();
  r.tokens_per_s = rd.pod<double>();
  r.tflops_per_gpu = rd.pod<double>();
  r.mfu = rd.pod<double>();
  r.breakdown = rd.pod<Breakdown>();
  r.per_stage.resize(rd.pod<uint64_t>());
  for (auto& b : r.per_stage) b = rd.pod<Breakdown>();
  r.per_rank.resize(rd.pod<uint64_t>());
  for (auto& t : r.per_rank) t = rd.pod<RankTimes>();
  r.per_rank_breakdown.resize(rd.pod<uint64_t>());
  for (auto& b : r.per_rank_breakdown) b = rd.pod<Breakdown>();
  r.incidents.resize(rd.pod<uint64_t>());
  for (auto& i : r.incidents) {
    i.rank = rd.pod<int64_t>();
    i.op_index = rd.pod<uint32_t>();
    i.name = rd.str();
    i.failed = rd.pod<bool>();
    i.at_s = rd.pod<double>();
    i.stalled_s = rd.pod<double>();
  }
  r.trace.source = rd.str();
  r.trace.events.resize(rd.pod<uint64_t>());
  for (auto& e : r.trace.events) e = rd.pod<schedules::TraceEvent>();
  r.aggregated = rd.pod<bool>();
  r.executed_ranks = rd.pod<int64_t>();
  r.replica_classes = rd.pod<int64_t>();
  r.ops_executed = rd.pod<int64_t>();
  r.flows = rd.pod<int64_t>();
  r.wall_s = rd.pod<double>();
  r.link_loads.resize(rd.pod<uint64_t>());
  for (auto& l : r.link_loads) l = rd.pod<LinkLoad>();
  return r;
}

} // namespace twinscale::sim::detail
