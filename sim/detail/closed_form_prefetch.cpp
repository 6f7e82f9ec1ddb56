#include "sim/detail/closed_form_prefetch.hpp"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>

#include "common/helper_thread.hpp"
#include "sim/detail/collective_task.hpp"

namespace twinscale::sim::detail {

using schedules::GroupKind;
using schedules::OpKind;

ClosedFormKey closed_form_key(OpKind kind, GroupKind group, int64_t first_member, double bytes) {
  return {(static_cast<uint64_t>(kind) << 40) | (static_cast<uint64_t>(group) << 32) |
              static_cast<uint64_t>(first_member),
          bytes};
}

namespace {

/// The ranks of image_gpu_groups' groups.
std::vector<std::vector<int64_t>> image_groups(const schedules::Layout& L, GroupKind kind,
                                               const std::vector<int64_t>& members, bool images) {
  std::vector<std::vector<int64_t>> out;
  if (!images || kind == GroupKind::World || kind == GroupKind::Tp) {
    out.push_back(members);
    return out;
  }
  const bool folded = L.folded_experts() && (kind == GroupKind::Ep || kind == GroupKind::ExpertDp);
  if (kind == GroupKind::EpNode || kind == GroupKind::EpRail || folded) {
    out.push_back(members); // the executed group first, then every other of its kind at this pp
    const auto c0 = L.coord(members[0]);
    for (int64_t d = 0; d < L.dp; ++d)
      for (int64_t ts = 0; ts < L.tp; ++ts) {
        const int64_t leader = L.rank({(c0.tp + ts) % L.tp, d, c0.pp});
        if (leader != members[0] && L.group_rank(kind, leader) == 0) out.push_back(L.group_members(kind, leader));
      }
    return out;
  }
  const int64_t tp_shifts = kind == GroupKind::ExpertDp ? 1 : L.tp; // expert dp spans all tp
  // dp shifts that move the group onto another group of its kind: none for dp, one per
  // block for ep (steps of ep), one per residue for expert dp, all for the others
  // (with context parallelism a shift keeps the cp rank: the other cp ranks are executed)
  int64_t dp_shifts = L.dp / L.cp;
  int64_t dp_step = L.cp;
  if (kind == GroupKind::Dp) dp_shifts = 1;
  if (kind == GroupKind::Ep) dp_shifts = L.dp / L.ep, dp_step = L.ep;
  if (kind == GroupKind::ExpertDp) dp_shifts = L.ep;
  std::vector<schedules::RankCoord> coords; // the members' coordinates, shifted below
  coords.reserve(members.size());
  for (int64_t m : members) coords.push_back(L.coord(m));
  out.reserve(static_cast<size_t>(dp_shifts * tp_shifts));
  for (int64_t di = 0; di < dp_shifts; ++di) {
    const int64_t ds = di * dp_step;
    for (int64_t ts = 0; ts < tp_shifts; ++ts) {
      std::vector<int64_t> g;
      g.reserve(members.size());
      for (const auto& c : coords) g.push_back(L.rank({(c.tp + ts) % L.tp, (c.dp + ds) % L.dp, c.pp}));
      out.push_back(std::move(g));
    }
  }
  return out;
}

} // namespace

std::vector<std::vector<int64_t>> image_gpu_groups(const schedules::Layout& layout,
                                                   const std::vector<int64_t>& gpu_of_rank, GroupKind kind,
                                                   const std::vector<int64_t>& members, bool images) {
  std::vector<std::vector<int64_t>> out = image_groups(layout, kind, members, images);
  for (auto& g : out)
    for (int64_t& m : g) m = gpu_of_rank[static_cast<size_t>(m)];
  return out;
}

namespace {

/// The most flows one phase of a closed form may route on the helper's thread. Its
/// scratch (about 180 bytes a routed flow) grows in its own malloc arena and stays there:
/// 2^16 flows keep it near 12 MB. Larger ones (the pipeline's 4-byte
/// all-reduce over the whole world at 131,072 GPUs routes 262,144) are computed by the
/// executor's thread in the main heap, as without a prefetch.
constexpr size_t kMaxFlows = size_t{1} << 16;

} // namespace

bool ClosedFormPrefetch::worth_it(const SimOptions& options, const NetworkPaths& paths) {
  if (!options.prefetch_closed_forms || options.mode != SimMode::Analytic || !options.aggregate || options.every_rank ||
      options.hang_rank >= 0 || !options.gpu_speed.empty() || options.faults != nullptr ||
      options.calibration != nullptr || paths.windows() != nullptr || options.shared_routes != nullptr)
    return false;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  return sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_COUNT(&cpus) >= 2;
}

ClosedFormPrefetch::ClosedFormPrefetch(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank,
                                       const NetworkPaths& paths, const SimOptions& options, std::vector<int64_t> ranks,
                                       bool images)
    : schedule_(schedule), gpu_of_rank_(gpu_of_rank), paths_(paths), options_(options) {
  if (helper_wanted(options.helper_thread))
    thread_ = thread_beside([this, r = std::move(ranks), images]() mutable { run(std::move(r), images); });
}

ClosedFormPrefetch::~ClosedFormPrefetch() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void ClosedFormPrefetch::finish() {
  if (thread_.joinable()) thread_.join();
}

std::optional<double> ClosedFormPrefetch::take(const ClosedFormKey& key) {
  const std::lock_guard lock(mutex_);
  if (auto it = ready_.find(key); it != ready_.end()) return it->second;
  taken_.insert(key);
  return std::nullopt;
}

size_t ClosedFormPrefetch::computed() {
  const std::lock_guard lock(mutex_);
  return ready_.size();
}

void ClosedFormPrefetch::run(std::vector<int64_t> ranks, bool images) {
  struct Wanted {
    ClosedFormKey key;
    OpKind kind;
    GroupKind group;
    int64_t rank;
  };
  // Only on a core nothing else wants (the constructor's look): with every core busy, a
  // helper at normal priority took CPU from the executor (0.0564 s against 0.0523 s
  // without it), and one at idle priority still took its slices (0.058 against 0.055 s).
  // It also runs at idle priority.
  const sched_param idle{};
  pthread_setschedparam(pthread_self(), SCHED_IDLE, &idle); // lowering one's priority needs no privilege
  advise_huge_pages_in_thread_heap();                       // its scratch in 2 MiB pages, as the executor's
  try {
    const NetworkPaths paths(paths_, NetworkPaths::OwnScratch{});
    const CollectiveTasks tasks(paths, options_);
    const auto& L = schedule_.layout;
    // each rank's distinct collectives in program order; then their k-th ones in turn
    std::unordered_set<ClosedFormKey, ClosedFormHash> seen;
    std::vector<std::vector<Wanted>> by_rank(ranks.size());
    for (size_t i = 0; i < ranks.size() && !stop_.load(std::memory_order_relaxed); ++i) {
      std::array<int64_t, schedules::kGroupKindCount> first{}; // by kind: first member + 1; -1: a group of one
      for (const schedules::Op& op : schedule_.program(ranks[i]).ops) {
        if (!op.is_collective()) continue;
        int64_t& f = first[static_cast<size_t>(op.group)];
        if (f == 0) {
          const auto members = L.group_members(op.group, ranks[i]);
          f = members.size() <= 1 ? -1 : members.front() + 1;
        }
        if (f < 0) continue;
        const ClosedFormKey key = closed_form_key(op.kind, op.group, f - 1, op.bytes);
        if (seen.insert(key).second) by_rank[i].push_back({key, op.kind, op.group, ranks[i]});
      }
    }
    for (size_t k = 0;; ++k) {
      bool any = false;
      for (const auto& wanted : by_rank) {
        if (k >= wanted.size()) continue;
        any = true;
        if (stop_.load(std::memory_order_relaxed)) return;
        const Wanted& w = wanted[k];
        {
          const std::lock_guard lock(mutex_);
          if (taken_.contains(w.key)) continue;
        }
        const auto gpu_groups = image_gpu_groups(L, gpu_of_rank_, w.group, L.group_members(w.group, w.rank), images);
        const CollectivePlan plan = tasks.plan(w.kind, w.key.bytes, gpu_groups.front());
        size_t flows = 0; // routed at once by one phase; the largest are left to the executor's thread
        for (const auto& phase : plan.phases) flows = std::max(flows, phase.transfers.size() * gpu_groups.size());
        if (flows > kMaxFlows) continue;
        const double seconds = tasks.closed_form_s(plan, w.kind, gpu_groups);
        const std::lock_guard lock(mutex_);
        ready_.emplace(w.key, seconds);
      }
      if (!any) return;
    }
  } catch (...) { // the executor computes what is missing itself, and reports any error there
  }
}

} // namespace twinscale::sim::detail
