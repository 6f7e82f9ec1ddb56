// The diagnosis of one run (MegaScale M18–M20): stragglers and slow hosts (a rank's own
// compute time against its peers', robust statistics), slow links (a group's collectives
// against other groups'), hangs (who everyone waits on) and late launchers (who started
// the last collective of a step late). Pure functions of RunData: deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "diagnose/run_data.hpp"

namespace twinscale::diagnose {

struct DiagnoseOptions {
  /// A straggler's own time exceeds its peers' median by at least this fraction…
  double min_excess = 0.03;
  /// …and by at least this many robust standard deviations (1.4826·MAD of its peers).
  double min_z = 4.0;
  /// Floor of the robust scale as a fraction of the median: identical peers (a
  /// deterministic simulation) must not make every microsecond an outlier.
  double scale_floor = 0.005;
  /// A host is slow when at least this fraction of its ranks are stragglers.
  double host_fraction = 0.5;
  /// A collective instance is slow (slow link) when its transfer time (last arrival to
  /// end) exceeds the median over same collectives of other groups by this fraction.
  double link_excess = 0.10;
  /// A launch is late when it comes this fraction of the step time after its peers'.
  double late_fraction = 0.01;
  /// > 0: the first baseline_steps steps are a healthy reference and a straggler is a
  /// rank that *became* slower: its excess over its peers after the baseline minus its
  /// own excess during it (medians over steps), against the same change of its peers.
  /// A persistent chip-to-chip spread cancels out; a rank slow from the start is not found.
  int64_t baseline_steps = 0;
};

enum class FindingKind : uint8_t { Hang, FailedOps, Straggler, SlowHost, SlowLink, Jitter, LateLauncher };
std::string_view to_string(FindingKind);

struct Finding {
  FindingKind kind = FindingKind::Straggler;
  std::vector<int64_t> ranks;       // the culprit(s): stuck-on rank, straggler, host's ranks, group
  std::string host;                 // slow hosts, and any rank whose host is known
  double excess = 0;                // fraction slower than peers (lateness / step time for launches)
  double score = 0;                 // robust z (or count of blocked ranks for hangs)
  int64_t detected_after_steps = 0; // stragglers: first step count at which it is flagged
  std::string detail;               // one human sentence
  std::string link;                 // slow links from link loads: the link's name
  std::vector<int64_t> blocked;     // hangs: every rank blocked behind the culprit(s), directly or not
};

/// Every rank's score, for heat-maps and the report.
struct RankScore {
  int64_t rank = 0;
  int64_t peer_group = 0;
  std::string host;  // where the rank ran, as RunData::hosts names it; "" unknown
  double excess = 0; // median over steps of own time / peers' median − 1
  double z = 0;      // median over steps of the robust z
  std::vector<double> phase_excess;
  int64_t late_launches = 0;
};

struct Diagnosis {
  std::string source;
  int64_t ranks = 0;
  int64_t steps = 0;
  std::vector<Finding> findings;  // hangs, then by kind, then by score
  std::vector<RankScore> scores;  // by rank
  std::vector<std::string> notes; // what could not be analysed and why
};

Diagnosis diagnose_run(const RunData& data, const DiagnoseOptions& options = {});

// The parts, for tests and for the report.
void find_stragglers(const RunData& data, const DiagnoseOptions& options, Diagnosis& out);
void find_hangs(const RunData& data, Diagnosis& out);
/// Communication ops the trace marks as failed (a flow past the retransmit limit, an op
/// aborted by a failed job): one finding with how many of how many failed and on which
/// ranks, unless a hang finding (found first) already explains them. The timings around
/// failed ops are not a healthy run's, so "nothing found" would be wrong however
/// ordinary they look.
void find_failed_ops(const RunData& data, Diagnosis& out);
void find_late_launchers(const RunData& data, const DiagnoseOptions& options, Diagnosis& out);
void find_slow_links(const RunData& data, const DiagnoseOptions& options, Diagnosis& out);
/// From flow-mode link loads (RunData::links): a link whose two directions both moved
/// bytes ≥ link_excess slower (bytes / busy time) than the median of the links of its
/// kind, and ≥ min_z robust deviations: a degraded link. A direction slow alone is a
/// flow limited elsewhere on its path (counted in a note, not a finding); links in series
/// with the same bytes both ways (a GPU's PCIe and NIC links) are one finding naming all.
void find_slow_links_from_loads(const RunData& data, const DiagnoseOptions& options, Diagnosis& out);

/// Median of `v` (by copy; 0 for an empty vector) and its median absolute deviation.
double median(std::vector<double> v);
double mad(const std::vector<double>& v, double med);

/// Output: a human table, and JSON.
std::string format_table(const Diagnosis& d, size_t max_rows = 40);
std::string to_json(const Diagnosis& d);

} // namespace twinscale::diagnose
