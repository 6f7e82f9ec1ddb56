// What `twinscale diagnose` reads, in one shape whatever the file: per-rank, per-step,
// per-phase times (from a Chrome trace or a per-rank CSV), the communication ops of a
// trace, and the "waiting for" states of a run that did not complete (M19). Simulated and
// real runs land in the same RunData, so the analyses never know which they look at.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "diagnose/comm_summary.hpp"
#include "diagnose/hang_report.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/layout.hpp"
#include "schedules/trace.hpp"

namespace twinscale::diagnose {

/// One rank's times: step_phase_s[step][phase] seconds (phases: RunData::phases).
struct RankSeries {
  int64_t rank = 0;
  /// Ranks that run the same program (the same pipeline stage, any TP/DP position) share
  /// a peer group; a rank is only ever compared with its peers.
  int64_t peer_group = 0;
  int64_t host = -1; // index in RunData::hosts; -1: unknown
  std::vector<std::vector<double>> step_phase_s;
};

/// One communication op of one rank, from a trace.
struct CommEvent {
  int64_t rank = 0;
  int32_t step = 0;
  uint32_t op_index = 0;
  schedules::Stream stream = schedules::Stream::TpComm;
  schedules::OpKind kind = schedules::OpKind::AllReduce;
  std::string name;
  int64_t occurrence = 0; // index among this rank's ops on the same stream in the step
  double start_s = 0;
  double end_s = 0;
  bool failed = false;
};

/// The M19 evidence of a run directory: who logged a state, who waits for whom.
struct HangEvidence {
  bool present = false; // a run directory with state files was read
  int64_t world = 0;
  std::vector<int64_t> silent;     // ranks without a state file (dead, or stopped)
  std::vector<int64_t> incomplete; // ranks that logged but did not complete
  std::vector<Wait> waits;         // ops ranks were stuck in, and the peers that never arrived
};

/// One link direction's load in a flow-mode run (sim/link_csv.hpp's CSV).
struct LinkUse {
  std::string name, direction, kind;
  double bytes = 0, busy_s = 0, busy_fraction = 0, rate_fraction = 0;
};

struct RunData {
  std::string source; // what was read (file or directory), for messages and output
  std::vector<std::string> phases;
  /// Phases a slow rank lengthens by itself (compute); the others (waiting on
  /// communication) also grow on healthy ranks that wait for a slow one.
  std::vector<bool> own_time;
  std::vector<RankSeries> ranks; // by rank
  std::vector<std::string> hosts;
  std::optional<schedules::Layout> layout;     // known from the CSV columns or given
  std::vector<CommEvent> comms;                // Chrome traces only
  CommSummary comm_summary;                    // binary traces: comms reduced as read
  std::string binary_trace;                    // the .tstrace read (the report's timeline reads it)
  std::vector<schedules::TraceRecord> records; // traces only: every op (the report's timeline)
  HangEvidence hang;
  std::vector<LinkUse> links;     // flow-mode link loads (`--links`), when given
  std::vector<std::string> notes; // what the input lacks
  int64_t steps() const { return ranks.empty() ? 0 : static_cast<int64_t>(ranks.front().step_phase_s.size()); }
};

/// Parses `rank,tp,pp,dp,forward_s,backward_s,comm_wait_s` (sim/per_rank_csv.hpp);
/// `source` names the file in errors. Ranks are grouped on hosts of `gpus_per_host`
/// consecutive ranks. Throws DiagnoseError naming the line and column.
RunData read_per_rank_csv(const std::string& text, const std::string& source, int64_t gpus_per_host);

/// Builds RunData from the records of a Chrome trace: per step (args.iteration) and
/// phase, the busy time of the compute stream; peers are ranks with the same program.
/// Ranks are on the hosts the trace names (`hosts`, index = rank, as
/// read_chrome_trace gives them), else on hosts of `gpus_per_host` consecutive ranks.
RunData from_trace(const std::vector<schedules::TraceRecord>& records, const std::string& source, int64_t gpus_per_host,
                   const std::vector<std::string>& hosts = {});

/// Builds RunData from a binary trace (`.tstrace`) with the same reading as from_trace,
/// without holding its events: rank blocks are read by `threads` threads, each rank's
/// compute time summed per step and phase, its communication ops reduced
/// (comm_summary.hpp) as they are read. `layout` (default: the file's) groups collectives.
/// Ranks are on the hosts the file names (version 2), else grouped by `gpus_per_host`.
RunData from_binary_trace(const schedules::BinaryTraceReader& reader, int64_t gpus_per_host,
                          const std::optional<schedules::Layout>& layout, int threads = 2);

/// Hosts of `gpus_per_host` consecutive ranks (host<i>). Throws DiagnoseError when < 1.
void group_hosts(RunData& data, int64_t gpus_per_host);

/// Appends the steps of `more` (another step of the same job: same ranks, same phases)
/// to `into`; a run measured one step per file (e.g. per-rank CSVs of successive
/// simulated steps). Throws DiagnoseError naming both sources when they differ.
void append_steps(RunData& into, const RunData& more);

/// Parses the link CSV of `simulate --link-csv` (sim/link_csv.hpp); `source` names the
/// file in errors. Throws DiagnoseError naming the line and column.
std::vector<LinkUse> read_link_csv(const std::string& text, const std::string& source);

/// Host names per rank (a run's state files, a trace's hosts) replace the gpus_per_host
/// grouping; a rank `host_of_rank` does not name ("" or past its end) keeps the name it had.
void set_hosts(RunData& data, const std::vector<std::string>& host_of_rank);

} // namespace twinscale::diagnose
