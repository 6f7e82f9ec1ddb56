// Closed forms computed ahead, on the other core. An analytic run asks for the closed form
// of each distinct collective (kind, group, bytes) once, when the first member reaches it
// in the event run; at 12,288 GPUs the 64 a run asks for take about a sixth of its
// instructions (a DP group's 8 tp images route 1,536 flows, the pipeline's 4-byte
// all-reduce counts the whole world's 12,288). Which ones it will ask for is known before
// the run: the collectives of the executed ranks' programs. A ClosedFormPrefetch computes
// them on a thread of its own, with its own copy of the paths' scratch and caches, while
// the executor is set up and runs; the executor takes each one it finds ready instead of
// computing it (SimExecutor::collective_task).
//
// Exact: a closed form is a function of the plan, the groups and the link bandwidths
// alone (NetworkPaths::closed_form_s; the caches only avoid recomputing it), so the helper
// computes the same double the executor would. A form the executor asks for before the
// helper has it, the executor computes itself and the helper skips. Nothing the run
// prints depends on which thread computed what.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "schedules/schedule.hpp"
#include "sim/detail/network_paths.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

/// What a collective's closed form is cached under: its kind, its group's kind and first
/// member (packed), and its bytes.
struct ClosedFormKey {
  uint64_t group;
  double bytes;
  bool operator==(const ClosedFormKey&) const = default;
};
struct ClosedFormHash {
  size_t operator()(const ClosedFormKey& k) const {
    uint64_t b = 0;
    static_assert(sizeof b == sizeof k.bytes);
    __builtin_memcpy(&b, &k.bytes, sizeof b);
    return std::hash<uint64_t>{}(k.group * 0x9e3779b97f4a7c15ULL ^ b);
  }
};
ClosedFormKey closed_form_key(schedules::OpKind kind, schedules::GroupKind group, int64_t first_member, double bytes);

/// The GPUs of the group `members` of `kind` (ranks) and, with `images`, of the groups
/// its symmetric images form (every tp shift, and every dp shift for pipeline groups):
/// the traffic that runs at once when all ranks of a stage run in step. The group first.
std::vector<std::vector<int64_t>> image_gpu_groups(const schedules::Layout& layout,
                                                   const std::vector<int64_t>& gpu_of_rank, schedules::GroupKind kind,
                                                   const std::vector<int64_t>& members, bool images);

class ClosedFormPrefetch {
public:
  /// Whether a run with `options` on `paths` would use one: SimOptions::
  /// prefetch_closed_forms on, an analytic run that executes
  /// one pipeline (aggregate on; neither every_rank, a hung rank nor per-GPU speeds) with
  /// neither a fault plan, nor a calibration table, nor degradation windows, nor routes
  /// shared with other runs (a sweep: its memo is not for two threads), on a process
  /// allowed at least two CPUs. The helper runs at idle priority (SCHED_IDLE); no figure
  /// depends on which thread computes a form.
  static bool worth_it(const SimOptions& options, const NetworkPaths& paths);

  /// Starts computing, on a thread of its own, the closed form of every collective of
  /// the programs of `ranks` (their k-th collectives in turn, roughly the order the run
  /// reaches them), with images as collective_task takes them (`images`). `schedule`,
  /// `gpu_of_rank`, `paths` (its fabric and bandwidths, which must not change meanwhile)
  /// and `options` must outlive this object. The thread starts where
  /// helper_wanted(options.helper_thread) (by default only where another core is idle);
  /// otherwise nothing is computed ahead and every key is the caller's.
  ClosedFormPrefetch(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank,
                     const NetworkPaths& paths, const SimOptions& options, std::vector<int64_t> ranks, bool images);
  /// Stops after the closed form under way and joins the thread.
  ~ClosedFormPrefetch();
  ClosedFormPrefetch(const ClosedFormPrefetch&) = delete;
  ClosedFormPrefetch& operator=(const ClosedFormPrefetch&) = delete;

  /// The closed form of `key` when the helper has computed it; otherwise nullopt, and the
  /// helper will not compute it (the caller does).
  std::optional<double> take(const ClosedFormKey& key);

  /// Closed forms the helper computed so far (tests).
  size_t computed();
  /// Waits until the helper has computed every closed form not taken (tests).
  void finish();

private:
  void run(std::vector<int64_t> ranks, bool images);

  const schedules::Schedule& schedule_;
  const std::vector<int64_t>& gpu_of_rank_;
  const NetworkPaths& paths_;
  const SimOptions& options_;
  std::mutex mutex_;
  std::unordered_map<ClosedFormKey, double, ClosedFormHash> ready_;
  std::unordered_set<ClosedFormKey, ClosedFormHash> taken_;
  std::atomic<bool> stop_{false};
  std::thread thread_; // last: started once everything it reads is constructed
};

} // namespace twinscale::sim::detail
