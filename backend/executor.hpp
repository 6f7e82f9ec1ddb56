// The one executor: walks one rank's program and issues each op on its stream through a
// Device, honouring the execution rules (schedules/execution_rules.hpp, docs/execution.md:
// stream order, dependencies, each channel's ops in program order, start order by
// priority); records per-op times (read back once at the end: M18) and, when nothing
// has completed for `timeout_s`, stops and says what it waits for (M19).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "backend/device.hpp"
#include "records/rank_state.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::backend {

struct ExecutorOptions {
  /// The watchdog: stop when the rank has made no progress for this long while ops are
  /// outstanding. Progress means an op *completed*, or (on devices that issue an op only
  /// once it is ready, i.e. the CPU) a compute op is running: local compute cannot hang
  /// on a peer. An op merely issued is not progress, and an op's age is not a hang (a
  /// receive posted early ages while the rank computes). Every wait of the executor is
  /// bounded by it. Must be finite and positive (the runner checks).
  double timeout_s = 60;
  /// Devices that order on device (CUDA): at most this many issued, unfinished ops per
  /// stream, so a hung kernel cannot fill the launch queue and block the host thread
  /// (then neither the timeout nor the abort flag would be seen).
  size_t max_in_flight_per_stream = 64;
  /// Longest idle sleep between two progress checks (no busy spinning).
  double idle_wait_s = 200e-6;
  /// Polled about every `abort_poll_s` while idle: true when another rank has given up
  /// (the runner's abort flag), so that this rank stops at once instead of waiting out
  /// its own timeout on peers that are themselves stuck.
  std::function<bool()> should_abort;
  double abort_poll_s = 5e-3;
  /// Cross-rank progress (optional; the runner provides both with --run-dir). A rank's
  /// *effective* progress time is its own last progress or, if later, that of a peer its
  /// outstanding ops wait on (as published): a rank waiting on a slow but progressing
  /// chain of peers is not hung, while a cycle of waiting ranks or a stopped rank makes
  /// no progress anywhere and ages out. The rank stops when its effective progress is
  /// older than timeout_s. Times are on the device clock (now_s: the common epoch).
  /// `publish_progress` is called at most every timeout_s/4; `peer_progress` returns a
  /// rank's last published time (-infinity if none).
  std::function<void(double progress_s)> publish_progress;
  std::function<double(int64_t rank)> peer_progress;
};

/// How a rank stopped (records/rank_state.hpp; Aborted: because another rank timed out
/// or failed, seen through its abort flag).
using RunStatus = records::RunStatus;
using records::to_string;

struct RankResult {
  int64_t rank = 0;
  RunStatus status = RunStatus::Completed;
  uint32_t ops_total = 0;
  uint32_t ops_completed = 0;
  double elapsed_s = 0;
  std::vector<records::WaitingOp> waiting;   // issued, not completed (empty if Completed)
  std::vector<uint32_t> failed_ops;          // ops the device reported as failed
  std::map<std::string, int64_t> issued;     // channel → ops issued on it
  std::vector<schedules::TraceEvent> events; // completed ops, and failed/pending ones
};

/// Channel of op `op` of `rank` (see records::WaitingOp::channel); empty for compute ops.
std::string op_channel(const schedules::Schedule& schedule, int64_t rank, const schedules::Op& op);
/// Global ranks an op of `rank` needs: its group's members (collectives) or its peer.
std::vector<int64_t> op_peers(const schedules::Schedule& schedule, int64_t rank, const schedules::Op& op);

class Executor {
public:
  /// `device` must not have been prepared; the executor prepares it for `rank`.
  Executor(const schedules::Schedule& schedule, int64_t rank, Device& device, ExecutorOptions options = {});
  RankResult run();

private:
  const schedules::Schedule& schedule_;
  int64_t rank_;
  Device& device_;
  ExecutorOptions options_;
};

} // namespace twinscale::backend
