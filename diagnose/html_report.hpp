// `twinscale report`: one self-contained HTML file (inline CSS, JS, data and the Vega
// charting library; no network) showing a run at once: a one-sentence summary, the time
// by phase and stage, a rank × phase heat-map, the TP × DP × PP grid coloured by
// slowness, a timeline of chosen ranks, link utilisation by tier, a campaign's time by
// state and the diagnosis findings. Large runs are aggregated here, before drawing
// (rank bins, DP bins, the busiest links of each tier), so the page stays responsive.
#pragma once

#include <cstdint>
#include <optional>
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
  /// At most this many events go on the timeline (the earliest); the page says so.
  size_t max_timeline_events = 40000;
  /// The heat-map draws at most this many rank rows (bins of consecutive ranks, worst shown).
  int64_t max_heatmap_rows = 256;
  /// The grid draws at most this many DP columns (bins of consecutive DP ranks).
  int64_t max_grid_columns = 192;
  /// Link directions named per tier (the busiest, and every one the diagnosis flags).
  size_t links_per_tier = 12;
  /// A campaign's mean time by state (from `twinscale campaign --json`), seconds; empty:
  /// the section says none was given.
  std::vector<std::pair<std::string, double>> campaign_time_by_state_s;
  double campaign_ettr = -1; // < 0: unknown
  std::string campaign_source;
  /// The charting library's JavaScript; unset: the copy embedded at build time. Tests set
  /// it to "" to see the error of a build made without the library.
  std::optional<std::string> chart_library;
};

/// The one-sentence summary at the top of the page (what was found, in words).
std::string report_summary(const RunData& data, const Diagnosis& diagnosis);

/// The layout of a trace whose collectives name their groups (TraceRecord::instance):
/// TP from the tp groups' sizes, the stage stride from pipeline messages, DP from the rest.
/// Empty when the records do not determine it.
std::optional<schedules::Layout> infer_layout(const std::vector<schedules::TraceRecord>& records, int64_t world);

/// Throws the DiagnoseError html_report would when no charting library is available
/// (commands call it before reading a large run).
void require_chart_library(const ReportOptions& options = {});

/// The HTML text (deterministic: same inputs, same bytes). Element ids: summary,
/// breakdown, heatmap, grid, timeline, links, campaign, findings; each chart's element
/// gets data-axes and data-legends (counted in Vega's scene graph) once drawn; the page
/// sets data-rendered="ok" on <body> when its scripts ran, or lists the error in #errors.
/// Throws DiagnoseError when no charting library is available (see ReportOptions).
std::string html_report(const RunData& data, const Diagnosis& diagnosis, const ReportOptions& options = {});

} // namespace twinscale::diagnose
