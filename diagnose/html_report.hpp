// `twinscale report`: one self-contained HTML file (inline CSS, JS and data; no network)
// showing a run at once: the time breakdown, a rank × phase heat-map, the TP × PP × DP
// grid coloured by slowness, a timeline of chosen ranks, and the diagnosis findings.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "diagnose/diagnosis.hpp"
#include "diagnose/run_data.hpp"

namespace twinscale::diagnose {

struct ReportOptions {
  std::string title = "twinscale report";
  /// Ranks drawn on the timeline (traces only); empty: rank 0 and the worst-scored ranks.
  std::vector<int64_t> timeline_ranks;
  size_t max_timeline_ranks = 8;
  /// A campaign's mean time by state (from `twinscale campaign --json`), seconds; empty:
  /// the section says none was given.
  std::vector<std::pair<std::string, double>> campaign_time_by_state_s;
  double campaign_ettr = -1; // < 0: unknown
  std::string campaign_source;
};

/// The HTML text (deterministic: same inputs, same bytes). Element ids: summary,
/// breakdown, heatmap, grid, timeline, links, campaign, findings; the page sets data-rendered="ok" on
/// <body> when its scripts ran, or lists the error in #errors.
std::string html_report(const RunData& data, const Diagnosis& diagnosis, const ReportOptions& options = {});

} // namespace twinscale::diagnose
