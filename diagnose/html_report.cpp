#include "diagnose/html_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "diagnose/error.hpp"
#include "diagnose/report/assets.hpp"

namespace twinscale::diagnose {

namespace {

using nlohmann::json;

/// Rounds to `digits` significant digits so the page's bytes do not depend on float
/// printing (and a 12,288-rank page stays small): 6 for values drawn as colours and
/// bars, 9 for the timeline's start times (microsecond ops seconds into a step).
double rounded(double x, int digits) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.*g", digits, x);
  return std::strtod(buf, nullptr);
}
double r6(double x) { return rounded(x, 6); }
double r9(double x) { return rounded(x, 9); }

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %%", 100 * fraction);
  return buf;
}

std::string grouped(int64_t n) { // 12288 -> "12,288"
  std::string s = std::to_string(n), o;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0 && s[i - 1] != '-') o += ',';
    o += s[i];
  }
  return o;
}

std::string plural(int64_t n, const std::string& word) { return grouped(n) + " " + word + (n == 1 ? "" : "s"); }

using Lay = std::optional<schedules::Layout>;

/// The layout when it covers every rank of the run.
Lay usable(const Lay& layout, const RunData& d) {
  return layout && layout->world() == static_cast<int64_t>(d.ranks.size()) ? layout : std::nullopt;
}

/// Where a rank sits in the layout, in words ("stage 3, DP 17, TP 2").
std::string position(const Lay& lay, int64_t rank) {
  if (!lay) return "";
  const schedules::RankCoord c = lay->coord(rank);
  return "stage " + std::to_string(c.pp) + ", DP " + std::to_string(c.dp) + ", TP " + std::to_string(c.tp);
}

/// Mean seconds of `phase` per step of rank `r`.
double mean_phase_s(const RankSeries& r, size_t phase) {
  if (r.step_phase_s.empty()) return 0;
  double sum = 0;
  for (const auto& step : r.step_phase_s) sum += step[phase];
  return sum / static_cast<double>(r.step_phase_s.size());
}

double excess_of(const Diagnosis& diag, size_t rank) {
  return rank < diag.scores.size() ? diag.scores[rank].excess : 0.0;
}

std::vector<int64_t> pick_timeline_ranks(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  std::set<int64_t> chosen;
  for (int64_t r : o.timeline_ranks)
    if (r >= 0 && r < static_cast<int64_t>(d.ranks.size())) chosen.insert(r);
  if (chosen.empty() && !d.ranks.empty()) {
    chosen.insert(0);
    for (const Finding& f : diag.findings)
      for (int64_t r : f.ranks)
        if (chosen.size() < o.max_timeline_ranks) chosen.insert(r);
  }
  std::vector<int64_t> v(chosen.begin(), chosen.end());
  if (v.size() > o.max_timeline_ranks) v.resize(o.max_timeline_ranks);
  return v;
}

/// Ranks per heat-map row: at least ranks / max_rows, and a divisor of the stage size
/// when there is one nearby, so that no row mixes two pipeline stages.
int64_t rank_bin(const RunData& d, const Lay& lay, int64_t max_rows) {
  const int64_t n = static_cast<int64_t>(d.ranks.size());
  const int64_t least = std::max<int64_t>(1, (n + max_rows - 1) / std::max<int64_t>(1, max_rows));
  if (lay) {
    const int64_t stage = lay->tp * lay->dp;
    for (int64_t per = least; per <= std::min(stage, 2 * least); ++per)
      if (stage % per == 0) return per;
  }
  return least;
}

/// Rank × phase cells: [first rank, last rank, phase, worst excess, mean seconds, worst rank].
json heat_cells(const RunData& d, const Diagnosis& diag, int64_t per) {
  json cells = json::array();
  const int64_t n = static_cast<int64_t>(d.ranks.size());
  for (size_t p = 0; p < d.phases.size(); ++p)
    for (int64_t r0 = 0; r0 < n; r0 += per) {
      const int64_t r1 = std::min(n, r0 + per) - 1;
      double worst = 0, sum_s = 0;
      int64_t worst_rank = r0;
      for (int64_t r = r0; r <= r1; ++r) {
        const size_t i = static_cast<size_t>(r);
        const double x =
            i < diag.scores.size() && p < diag.scores[i].phase_excess.size() ? diag.scores[i].phase_excess[p] : 0.0;
        if (std::abs(x) > std::abs(worst)) worst = x, worst_rank = r;
        sum_s += mean_phase_s(d.ranks[r], p);
      }
      cells.push_back({r0, r1, p, r6(worst), r6(sum_s / static_cast<double>(r1 - r0 + 1)), worst_rank});
    }
  return cells;
}

/// Pipeline stages (rank ranges) of a known layout: [stage, first rank, last rank].
json stage_ranges(const Lay& lay) {
  json s = json::array();
  if (!lay) return s;
  const int64_t size = lay->tp * lay->dp;
  for (int64_t p = 0; p < lay->pp; ++p) s.push_back({p, p * size, (p + 1) * size - 1});
  return s;
}

/// The TP × DP × PP grid: per stage and DP bin (over its TP ranks), the worst own-time
/// excess: [stage, first DP, last DP, worst excess, worst rank, mean excess]. Without a
/// layout: peer groups (ranks running the same program) as rows, members as columns.
json grid(const RunData& d, const Lay& lay, const Diagnosis& diag, const ReportOptions& o) {
  json g = {{"cells", json::array()}};
  if (lay) {
    const schedules::Layout& L = *lay;
    const int64_t per = std::max<int64_t>(1, (L.dp + o.max_grid_columns - 1) / o.max_grid_columns);
    g["by"] = "layout";
    g["dp_per_column"] = per;
    for (int64_t pp = 0; pp < L.pp; ++pp)
      for (int64_t dp0 = 0; dp0 < L.dp; dp0 += per) {
        const int64_t dp1 = std::min(L.dp, dp0 + per) - 1;
        double worst = 0, sum = 0;
        int64_t worst_rank = L.rank({0, dp0, pp}), count = 0;
        for (int64_t dp = dp0; dp <= dp1; ++dp)
          for (int64_t tp = 0; tp < L.tp; ++tp) {
            const int64_t r = L.rank({tp, dp, pp});
            const double x = excess_of(diag, static_cast<size_t>(r));
            if (x > worst) worst = x, worst_rank = r;
            sum += x, ++count;
          }
        g["cells"].push_back({pp, dp0, dp1, r6(worst), worst_rank, r6(sum / static_cast<double>(count))});
      }
    return g;
  }
  std::map<int64_t, std::vector<int64_t>> groups;
  for (const RankSeries& r : d.ranks) groups[r.peer_group].push_back(r.rank);
  size_t widest = 1; // members of the largest group
  for (const auto& [group, members] : groups) widest = std::max(widest, members.size());
  const size_t columns = static_cast<size_t>(std::max<int64_t>(1, o.max_grid_columns));
  const size_t per = (widest + columns - 1) / columns;
  g["by"] = "peer_group";
  g["dp_per_column"] = per;
  for (const auto& [group, members] : groups)
    for (size_t i0 = 0; i0 < members.size(); i0 += per) {
      const size_t i1 = std::min(members.size(), i0 + per) - 1;
      double worst = 0, sum = 0;
      int64_t worst_rank = members[i0];
      for (size_t i = i0; i <= i1; ++i) {
        const double x = excess_of(diag, static_cast<size_t>(members[i]));
        if (x > worst) worst = x, worst_rank = members[i];
        sum += x;
      }
      g["cells"].push_back({group, i0, i1, r6(worst), worst_rank, r6(sum / static_cast<double>(i1 - i0 + 1))});
    }
  return g;
}

json timeline(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  const std::vector<int64_t> lanes = pick_timeline_ranks(d, diag, o);
  const std::set<int64_t> lane_set(lanes.begin(), lanes.end());
  // A binary trace's events are not held: the chosen ranks' blocks are read back.
  const std::vector<schedules::TraceRecord> lane_records =
      d.records.empty() && !d.binary_trace.empty() ? schedules::BinaryTraceReader(d.binary_trace).records(lanes)
                                                   : std::vector<schedules::TraceRecord>{};
  std::vector<const schedules::TraceRecord*> chosen;
  for (const schedules::TraceRecord& r : d.records.empty() ? lane_records : d.records)
    if (lane_set.count(r.rank)) chosen.push_back(&r);
  std::stable_sort(chosen.begin(), chosen.end(), [](const auto* a, const auto* b) { return a->start_s < b->start_s; });
  const size_t total = chosen.size();
  if (chosen.size() > o.max_timeline_events) chosen.resize(o.max_timeline_events);
  std::map<std::string, int64_t> name_index;
  json names = json::array(), events = json::array();
  for (const schedules::TraceRecord* r : chosen) {
    const auto [it, fresh] = name_index.try_emplace(r->name, static_cast<int64_t>(names.size()));
    if (fresh) names.push_back(r->name);
    events.push_back({r->rank, static_cast<int>(r->stream), r9(r->start_s), r6(r->duration_s), it->second});
  }
  json streams = json::array();
  for (int s = 0; s < schedules::kStreamCount; ++s) streams.push_back(to_string(static_cast<schedules::Stream>(s)));
  return {{"ranks", lanes},
          {"names", std::move(names)},
          {"events", std::move(events)},
          {"streams", streams},
          {"events_total", total},
          {"binary", !d.binary_trace.empty()},
          {"source", d.source},
          {"has_trace", !d.records.empty() || !d.binary_trace.empty()}};
}

/// The links a finding names: its link, and the links of the run its sentence names as
/// crossed by the same flows (a degraded link and the one before it look alike).
std::vector<std::string> named_links(const Finding& f, const RunData& d) {
  std::vector<std::string> out;
  if (f.link.empty()) return out;
  out.push_back(f.link);
  std::set<std::string> seen{f.link};
  for (const LinkUse& u : d.links) {
    if (seen.count(u.name)) continue;
    for (size_t at = f.detail.find(u.name); at != std::string::npos; at = f.detail.find(u.name, at + 1)) {
      const size_t end = at + u.name.size();
      const bool starts = at == 0 || f.detail[at - 1] == ' ' || f.detail[at - 1] == '(';
      const bool ends = end == f.detail.size() || std::string(" ,:;)").find(f.detail[end]) != std::string::npos;
      if (starts && ends) {
        out.push_back(u.name);
        seen.insert(u.name);
        break;
      }
    }
  }
  return out;
}

/// Per link kind (tier): counts, mean and largest busy share, and the named link
/// directions: the busiest and every one the diagnosis flags,
/// [name, direction, busy fraction, rate fraction, bytes, flagged].
json link_tiers(const RunData& d, const Diagnosis& diag, const ReportOptions& o) {
  std::set<std::string> flagged;
  for (const Finding& f : diag.findings)
    for (const std::string& name : named_links(f, d)) flagged.insert(name);
  std::vector<std::string> order;
  std::map<std::string, std::vector<const LinkUse*>> by_kind;
  for (const LinkUse& u : d.links) {
    if (!by_kind.count(u.kind)) order.push_back(u.kind);
    by_kind[u.kind].push_back(&u);
  }
  json tiers = json::array();
  for (const std::string& kind : order) {
    std::vector<const LinkUse*> us = by_kind[kind];
    double sum = 0;
    for (const LinkUse* u : us) sum += u->busy_fraction;
    std::stable_sort(us.begin(), us.end(), [&](const LinkUse* a, const LinkUse* b) {
      const bool fa = flagged.count(a->name) > 0, fb = flagged.count(b->name) > 0;
      return fa != fb ? fa : a->busy_fraction > b->busy_fraction;
    });
    json named = json::array();
    for (size_t i = 0; i < us.size(); ++i) {
      const bool flag = flagged.count(us[i]->name) > 0;
      if (i >= o.links_per_tier && !flag) break;
      named.push_back(
          {us[i]->name, us[i]->direction, r6(us[i]->busy_fraction), r6(us[i]->rate_fraction), r6(us[i]->bytes), flag});
    }
    double hi = 0;
    for (const LinkUse* u : us) hi = std::max(hi, u->busy_fraction);
    tiers.push_back({{"kind", kind},
                     {"count", us.size()},
                     {"mean_busy", r6(sum / static_cast<double>(us.size()))},
                     {"max_busy", r6(hi)},
                     {"links", std::move(named)}});
  }
  return tiers;
}

/// Mean seconds per step of each phase, per pipeline stage (or peer group), averaged
/// over the stage's ranks: [row label, phase, seconds].
json breakdown(const RunData& d, const Lay& lay) {
  const bool by_stage = lay.has_value();
  std::map<int64_t, std::pair<std::vector<double>, int64_t>> rows;
  for (const RankSeries& r : d.ranks) {
    const int64_t key = by_stage ? lay->coord(r.rank).pp : r.peer_group;
    auto& [sum, count] = rows[key];
    sum.resize(d.phases.size(), 0.0);
    for (size_t p = 0; p < d.phases.size(); ++p) sum[p] += mean_phase_s(r, p);
    ++count;
  }
  json out = {{"by", by_stage ? "stage" : "peer_group"}, {"rows", json::array()}};
  for (const auto& [key, row] : rows)
    for (size_t p = 0; p < d.phases.size(); ++p)
      out["rows"].push_back({key, p, r6(row.first[p] / static_cast<double>(row.second))});
  return out;
}

json payload(const RunData& d, const Lay& lay, const Diagnosis& diag, const ReportOptions& o) {
  json j;
  j["title"] = o.title;
  j["source"] = d.source;
  j["summary"] = report_summary(d, diag);
  j["ranks"] = d.ranks.size();
  j["steps"] = d.steps();
  j["phases"] = d.phases;
  j["own_time"] = d.own_time;
  j["layout"] = lay ? json{{"tp", lay->tp}, {"pp", lay->pp}, {"dp", lay->dp}} : json();
  j["hosts"] = d.hosts.size();
  j["notes"] = diag.notes;
  for (const std::string& n : d.notes)
    if (std::find(diag.notes.begin(), diag.notes.end(), n) == diag.notes.end()) j["notes"].push_back(n);
  j["breakdown"] = breakdown(d, lay);
  const int64_t per = rank_bin(d, lay, o.max_heatmap_rows);
  j["heat"] = {{"per", per}, {"cells", heat_cells(d, diag, per)}, {"stages", stage_ranges(lay)}};
  j["grid"] = grid(d, lay, diag, o);
  j["timeline"] = timeline(d, diag, o);
  j["links"] = link_tiers(d, diag, o);
  json states = json::array();
  for (const auto& [name, seconds] : o.campaign_time_by_state_s) states.push_back({name, r6(seconds)});
  j["campaign"] = {{"source", o.campaign_source}, {"ettr", r6(o.campaign_ettr)}, {"states", std::move(states)}};
  j["findings"] = json::array();
  for (const Finding& f : diag.findings) {
    const std::string where = f.ranks.size() == 1 ? position(lay, f.ranks.front()) : "";
    j["findings"].push_back({{"kind", std::string(to_string(f.kind))},
                             {"ranks", f.ranks},
                             {"where", where},
                             {"host", f.host},
                             {"link", f.link},
                             {"excess", r6(f.excess)},
                             {"score", r6(f.score)},
                             {"detail", f.detail}});
  }
  return j;
}

std::string escape_html(const std::string& s) {
  std::string o;
  for (char c : s) switch (c) {
    case '<': o += "&lt;"; break;
    case '>': o += "&gt;"; break;
    case '&': o += "&amp;"; break;
    case '"': o += "&quot;"; break;
    default: o += c;
    }
  return o;
}

/// JSON text safe inside <script>: "</" would end the element; JSON allows "<\/".
std::string script_safe(std::string text) {
  for (size_t at = text.find("</"); at != std::string::npos; at = text.find("</", at + 3)) text.replace(at, 2, "<\\/");
  return text;
}

/// Seconds in words with 3 digits: "1.62 s", "652 µs", "0 s".
std::string duration(double s) {
  char buf[48];
  if (s == 0 || std::abs(s) >= 1)
    std::snprintf(buf, sizeof buf, "%.3g s", s);
  else if (std::abs(s) >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.3g ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.3g µs", s * 1e6);
  return buf;
}

/// "; per rank and step: 1.62 s forward, 3.08 s backward" (empty without ranks).
std::string mean_phases(const RunData& d) {
  if (d.ranks.empty() || d.phases.empty()) return "";
  std::string out = "; per rank and step: ";
  for (size_t p = 0; p < d.phases.size(); ++p) {
    double sum = 0;
    for (const RankSeries& r : d.ranks) sum += mean_phase_s(r, p);
    out += (p == 0 ? "" : ", ") + duration(sum / static_cast<double>(d.ranks.size())) + " " + d.phases[p];
  }
  return out;
}

} // namespace

std::string report_summary(const RunData& d, const Diagnosis& diag) {
  std::map<FindingKind, std::vector<const Finding*>> by;
  for (const Finding& f : diag.findings) by[f.kind].push_back(&f);
  std::string s = plural(static_cast<int64_t>(d.ranks.size()), "rank") + ", " + plural(d.steps(), "step") + ": ";
  if (by.count(FindingKind::Hang)) return s + "the run hung — " + by[FindingKind::Hang].front()->detail;
  if (diag.findings.empty())
    return s + "nothing abnormal found (no straggler, slow host, slow link or late launcher)" + mean_phases(d) + ".";
  std::vector<std::string> parts;
  if (by.count(FindingKind::FailedOps)) parts.push_back(by[FindingKind::FailedOps].front()->detail);
  if (by.count(FindingKind::Straggler)) {
    const auto& v = by[FindingKind::Straggler];
    const Finding* worst =
        *std::max_element(v.begin(), v.end(), [](auto* a, auto* b) { return a->excess < b->excess; });
    const int64_t r = worst->ranks.empty() ? -1 : worst->ranks.front();
    const std::string where = r >= 0 ? position(usable(d.layout, d), r) : "";
    parts.push_back(plural(static_cast<int64_t>(v.size()), "straggler") + " (the worst, rank " + std::to_string(r) +
                    (where.empty() ? "" : " at " + where) + ", " + percent(worst->excess) + " slower than its peers)");
  }
  if (by.count(FindingKind::SlowHost))
    parts.push_back(plural(static_cast<int64_t>(by[FindingKind::SlowHost].size()), "slow host") + " (" +
                    by[FindingKind::SlowHost].front()->host + (by[FindingKind::SlowHost].size() > 1 ? ", …)" : ")"));
  if (by.count(FindingKind::SlowLink)) {
    const auto& v = by[FindingKind::SlowLink];
    const std::vector<std::string> names = named_links(*v.front(), d);
    std::string what;
    if (names.size() == 2)
      what = " (" + names[0] + " or " + names[1] + ": the same flows cross both";
    else if (!names.empty())
      what = " (" + names[0];
    if (!what.empty()) what += v.size() > 1 ? ", …)" : ")";
    parts.push_back(plural(static_cast<int64_t>(v.size()), "slow link") + what);
  }
  if (by.count(FindingKind::Jitter))
    parts.push_back(plural(static_cast<int64_t>(by[FindingKind::Jitter].size()), "jittery link"));
  if (by.count(FindingKind::LateLauncher))
    parts.push_back(plural(static_cast<int64_t>(by[FindingKind::LateLauncher].size()), "late launcher"));
  s += "found ";
  for (size_t i = 0; i < parts.size(); ++i) s += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return s + ".";
}

std::optional<schedules::Layout> infer_layout(const std::vector<schedules::TraceRecord>& records, int64_t world) {
  std::map<std::string, std::set<int64_t>> tp_groups, dp_groups;
  int64_t stride = 0;
  for (const schedules::TraceRecord& r : records) {
    const std::string& in = r.instance;
    const size_t hash = in.find('#');
    if (in.empty() || hash == std::string::npos) continue;
    const std::string group = in.substr(0, hash);
    if (group.rfind("tp@", 0) == 0 || group.rfind("tp/", 0) == 0)
      tp_groups[group].insert(r.rank);
    else if (group.rfind("dp@", 0) == 0 || group.rfind("dp/", 0) == 0)
      dp_groups[group].insert(r.rank);
    else if (group.rfind("pp:", 0) == 0) {
      const size_t gt = group.find('>');
      if (gt == std::string::npos) continue;
      const int64_t a = std::atoll(group.c_str() + 3), b = std::atoll(group.c_str() + gt + 1);
      stride = std::max(stride, std::abs(b - a)); // neighbours; the wrap of a ring is not used
    }
  }
  int64_t tp = 1, dp = 0;
  for (const auto& [g, members] : tp_groups) tp = std::max<int64_t>(tp, static_cast<int64_t>(members.size()));
  for (const auto& [g, members] : dp_groups) dp = std::max<int64_t>(dp, static_cast<int64_t>(members.size()));
  if (world <= 0) return std::nullopt;
  if (stride > 0 && stride % tp == 0) dp = stride / tp;
  if (dp == 0) dp = world / tp; // no pipeline and no DP collectives: one stage
  if (tp * dp <= 0 || world % (tp * dp) != 0) return std::nullopt;
  schedules::Layout L;
  L.tp = tp, L.dp = dp, L.pp = world / (tp * dp);
  return L;
}

void require_chart_library(const ReportOptions& o) {
  if (o.chart_library ? o.chart_library->empty() : !report_assets::kChartLibraryFound)
    throw DiagnoseError("report: this twinscale was built without the Vega charting library the HTML report "
                        "embeds (Debian package libjs-vega, /usr/share/javascript/vega): install it "
                        "(scripts/install-deps.sh) and rebuild, or pass -DTWINSCALE_VEGA_DIR=DIR to cmake; "
                        "`twinscale diagnose --json` gives the same findings without charts");
}

std::string html_report(const RunData& given, const Diagnosis& diag, const ReportOptions& o) {
  require_chart_library(o);
  const std::string library = o.chart_library ? *o.chart_library : report_assets::kChartLibrary;
  Lay lay = usable(given.layout, given);
  std::string inferred;
  if (!lay && !given.records.empty())
    if ((lay = usable(infer_layout(given.records, static_cast<int64_t>(given.ranks.size())), given)))
      inferred =
          "TP " + std::to_string(lay->tp) + " × PP " + std::to_string(lay->pp) + " × DP " + std::to_string(lay->dp);
  json j = payload(given, lay, diag, o);
  j["layout_inferred"] = inferred;
  std::string h;
  h += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>" + escape_html(o.title) +
       "</title>\n<style>" + report_assets::kCss + "</style></head>\n<body>\n<h1>" + escape_html(o.title) + "</h1>\n";
  h += "<div id=\"errors\"></div>\n<section id=\"summary\"></section>\n";
  h += "<h2>Time by phase and stage</h2><section id=\"breakdown\" class=\"chart\"></section>\n";
  h += "<h2>Rank × phase</h2><section id=\"heatmap\" class=\"chart\"></section>\n";
  h += "<h2>TP × DP × PP grid</h2><section id=\"grid\" class=\"chart\"></section>\n";
  h += "<h2>Timeline</h2><section id=\"timeline\" class=\"chart\"></section>\n";
  h += "<h2>Fabric link utilisation by tier</h2><section id=\"links\" class=\"chart\"></section>\n";
  h += "<h2>Campaign: time by state</h2><section id=\"campaign\" class=\"chart\"></section>\n";
  h += "<h2>Diagnosis</h2><section id=\"findings\"></section>\n";
  h += "<script type=\"application/json\" id=\"run-data\">" + script_safe(j.dump()) + "</script>\n";
  h += "<script>\n" + library + "</script>\n";
  h += std::string("<script>\n") + report_assets::kScript + "</script>\n</body></html>\n";
  return h;
}

} // namespace twinscale::diagnose
