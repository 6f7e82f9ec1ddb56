// Late launchers (M20) and slow links, from the communication ops of a trace.
#include <algorithm>
#include <map>
#include <sstream>

#include "diagnose/comm_summary.hpp"
#include "diagnose/diagnosis.hpp"

namespace twinscale::diagnose {

namespace {

/// The reduction of a Chrome trace's CommEvents (in rank order); a binary trace's is
/// made as it is read (binary_input.cpp).
CommSummary summarize(const RunData& d) {
  std::vector<const CommEvent*> order;
  order.reserve(d.comms.size());
  for (const CommEvent& c : d.comms) order.push_back(&c);
  std::stable_sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->rank < b->rank; });
  std::map<std::string, uint32_t> index;
  std::vector<std::string> names;
  CommReducer r(d.layout, static_cast<int64_t>(d.ranks.size()));
  for (const CommEvent* c : order) {
    const auto [it, fresh] = index.try_emplace(c->name, static_cast<uint32_t>(names.size()));
    if (fresh) names.push_back(c->name);
    r.add(c->rank, c->step, c->stream, c->op_index, c->occurrence, c->start_s, c->end_s, c->failed, it->second);
  }
  return r.finish(std::move(names), d.steps());
}

/// d.comm_summary when the reader made it, else the reduction of d.comms (in `scratch`).
const CommSummary& summary_of(const RunData& d, CommSummary& scratch) {
  if (d.comm_summary.present || d.comms.empty()) return d.comm_summary;
  scratch = summarize(d);
  return scratch;
}

} // namespace

void find_failed_ops(const RunData& d, Diagnosis& out) {
  for (const Finding& f : out.findings)
    if (f.kind == FindingKind::Hang) return; // the hang explains the ops it left failed
  CommSummary scratch;
  const CommSummary& s = summary_of(d, scratch);
  int64_t ops = 0, failed = 0;
  Finding f;
  for (size_t rank = 0; rank < s.steps.size(); ++rank) {
    int64_t of_rank = 0;
    for (const StepComms& c : s.steps[rank]) {
      ops += c.ops;
      of_rank += c.failed;
    }
    if (of_rank > 0) f.ranks.push_back(static_cast<int64_t>(rank));
    failed += of_rank;
  }
  if (failed == 0) return;
  f.kind = FindingKind::FailedOps;
  f.score = static_cast<double>(failed);
  f.detail = std::to_string(failed) + " of " + std::to_string(ops) +
             " communication op(s) failed (marked failed in the trace) on " + std::to_string(f.ranks.size()) +
             " rank(s); the run did not complete as a healthy one";
  out.findings.push_back(std::move(f));
}

void find_late_launchers(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  CommSummary scratch;
  const CommSummary& s = summary_of(d, scratch);
  if (!s.present) return;
  // Per (peer group, step): the launches of the last collective, and the steps' spans.
  std::map<std::pair<int64_t, int32_t>, std::vector<double>> starts, spans;
  for (size_t rank = 0; rank < s.steps.size() && rank < d.ranks.size(); ++rank)
    for (size_t step = 0; step < s.steps[rank].size(); ++step) {
      const StepComms& c = s.steps[rank][step];
      if (!c.collective) continue;
      const int64_t g = d.ranks[rank].peer_group;
      starts[{g, static_cast<int32_t>(step)}].push_back(c.last_start);
      spans[{g, static_cast<int32_t>(step)}].push_back(c.last_end - c.first_start);
    }
  std::map<std::pair<int64_t, int32_t>, std::pair<double, double>> ref; // median start, median span
  for (const auto& [k, v] : starts) ref[k] = {median(v), median(spans[k])};
  std::map<int64_t, std::vector<std::pair<int32_t, double>>> late_of_rank; // rank → (step, lateness)
  for (size_t rank = 0; rank < s.steps.size() && rank < d.ranks.size(); ++rank)
    for (size_t step = 0; step < s.steps[rank].size(); ++step) {
      const StepComms& c = s.steps[rank][step];
      if (!c.collective) continue;
      const std::pair<int64_t, int32_t> key{d.ranks[rank].peer_group, static_cast<int32_t>(step)};
      if (starts[key].size() < 3) continue;
      const auto [m, step_s] = ref[key];
      const double late = c.last_start - m;
      if (step_s > 0 && late >= o.late_fraction * step_s)
        late_of_rank[static_cast<int64_t>(rank)].push_back({static_cast<int32_t>(step), late / step_s});
    }
  for (const auto& [rank, late] : late_of_rank) {
    if (rank < static_cast<int64_t>(out.scores.size()))
      out.scores[static_cast<size_t>(rank)].late_launches = late.size();
    Finding f;
    f.kind = FindingKind::LateLauncher;
    f.ranks = {rank};
    const int64_t h = d.ranks[static_cast<size_t>(rank)].host;
    if (h >= 0) f.host = d.hosts[static_cast<size_t>(h)];
    std::ostringstream det;
    det.setf(std::ios::fixed);
    det.precision(1);
    det << "launched its last collective late in " << late.size() << " of " << d.steps() << " step(s):";
    double worst = 0;
    for (size_t i = 0; i < late.size() && i < 8; ++i)
      det << " step " << late[i].first << " +" << 100 * late[i].second << " %";
    for (const auto& l : late) worst = std::max(worst, l.second);
    f.excess = worst;
    f.score = static_cast<double>(late.size());
    f.detail = det.str();
    out.findings.push_back(std::move(f));
  }
}

void find_slow_links(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  CommSummary scratch;
  const CommSummary& s = summary_of(d, scratch);
  if (!s.present) return;
  if (!s.grouped) {
    out.notes.push_back(s.note);
    return;
  }
  const schedules::Layout& L = *d.layout;
  // Each instance against the same collective (stream, step, occurrence) of the other
  // groups of its pipeline stage: runs of equal (stream, step, occurrence) are adjacent.
  const int64_t world = L.world();
  std::vector<std::vector<double>> excess_tp(static_cast<size_t>(world)), excess_dp(static_cast<size_t>(world));
  std::vector<uint32_t> name_tp(static_cast<size_t>(world)), name_dp(static_cast<size_t>(world));
  const auto& all = s.collectives;
  std::map<int64_t, std::vector<double>> by_stage;
  std::map<int64_t, double> median_of_stage;
  for (size_t b = 0; b < all.size();) {
    size_t e = b;
    while (e < all.size() && all[e].stream == all[b].stream && all[e].step == all[b].step &&
           all[e].occurrence == all[b].occurrence)
      ++e;
    by_stage.clear();
    median_of_stage.clear();
    for (size_t i = b; i < e; ++i) by_stage[L.coord(all[i].leader).pp].push_back(all[i].transfer_s);
    for (auto& [stage, v] : by_stage) median_of_stage[stage] = v.size() < 3 ? 0.0 : median(std::move(v));
    const bool tp = all[b].stream == static_cast<uint8_t>(schedules::Stream::TpComm);
    for (size_t i = b; i < e; ++i) {
      const double m = median_of_stage[L.coord(all[i].leader).pp];
      if (m <= 0) continue;
      const auto leader = static_cast<size_t>(all[i].leader);
      (tp ? excess_tp : excess_dp)[leader].push_back(all[i].transfer_s / m - 1);
      (tp ? name_tp : name_dp)[leader] = all[i].name;
    }
    b = e;
  }
  for (const bool tp : {true, false})
    for (int64_t leader = 0; leader < world; ++leader) {
      const auto& ex = (tp ? excess_tp : excess_dp)[static_cast<size_t>(leader)];
      if (ex.empty()) continue;
      const double typical = median(ex);
      if (typical < o.link_excess) continue;
      const auto kind = tp ? schedules::GroupKind::Tp : schedules::GroupKind::Dp;
      Finding f;
      f.kind = FindingKind::SlowLink;
      f.ranks = L.group_members(kind, leader);
      f.excess = typical;
      f.score = static_cast<double>(ex.size());
      std::ostringstream det;
      det.setf(std::ios::fixed);
      det.precision(1);
      det << (tp ? "tp" : "dp") << " group of rank " << leader << ": collectives take " << 100 * typical
          << " % longer than the same collectives of other groups (median of " << ex.size() << ", e.g. "
          << s.names[(tp ? name_tp : name_dp)[static_cast<size_t>(leader)]] << ")";
      f.detail = det.str();
      out.findings.push_back(std::move(f));
    }
}

void find_slow_links_from_loads(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  if (d.links.empty()) return;
  std::map<std::string, std::vector<const LinkUse*>> by_kind;
  for (const LinkUse& u : d.links)
    if (u.busy_s > 0 && u.bytes > 0) by_kind[u.kind].push_back(&u);
  std::map<std::string, std::vector<std::pair<const LinkUse*, double>>> slow; // link → slow directions, z
  for (const auto& [kind, uses] : by_kind) {
    if (uses.size() < 3) continue;
    std::vector<double> rates;
    for (const LinkUse* u : uses) rates.push_back(u->rate_fraction);
    const double m = median(rates);
    const double scale = std::max(1.4826 * mad(rates, m), o.scale_floor * m);
    for (const LinkUse* u : uses) {
      const double z = scale > 0 ? (m - u->rate_fraction) / scale : 0;
      if (m > 0 && u->rate_fraction <= (1 - o.link_excess) * m && z >= o.min_z) slow[u->name].push_back({u, z});
    }
  }
  int64_t one_way = 0;
  // Links in series carry the same flows (a GPU's PCIe link and its NIC link): the loads
  // cannot tell which one is degraded; one finding names them all.
  std::map<std::pair<double, double>, std::vector<std::string>> same_flows; // (bytes up, bytes down) → links
  for (const auto& [name, dirs] : slow)
    if (dirs.size() >= 2) same_flows[{dirs[0].first->bytes, dirs[1].first->bytes}].push_back(name);
  for (const auto& [name, dirs] : slow) {
    if (dirs.size() < 2) {
      ++one_way;
      continue;
    }
    const auto& series = same_flows[{dirs[0].first->bytes, dirs[1].first->bytes}];
    if (series.front() != name) continue; // named by the first of its series
    const std::string& kind = dirs[0].first->kind;
    std::vector<double> rates;
    for (const LinkUse* u : by_kind[kind]) rates.push_back(u->rate_fraction);
    const double m = median(rates);
    Finding f;
    f.kind = FindingKind::SlowLink;
    f.link = name;
    f.excess = 1 - std::max(dirs[0].first->rate_fraction, dirs[1].first->rate_fraction) / m;
    f.score = std::min(dirs[0].second, dirs[1].second);
    std::ostringstream det;
    det.setf(std::ios::fixed);
    det.precision(1);
    det << "link " << name << " (" << kind << "): both directions moved data at " << 100 * dirs[0].first->rate_fraction
        << " % and " << 100 * dirs[1].first->rate_fraction << " % of its bandwidth while busy, against a median of "
        << 100 * m << " % over its " << by_kind[kind].size() << " " << kind << " link directions";
    if (series.size() > 1) {
      det << "; the same flows cross";
      for (size_t i = 1; i < series.size(); ++i) det << (i > 1 ? ", " : " ") << series[i];
      det << ", equally slow: one of these is degraded";
    }
    f.detail = det.str();
    out.findings.push_back(std::move(f));
  }
  if (one_way > 0)
    out.notes.push_back(std::to_string(one_way) + " link(s) slow in one direction only (flows limited elsewhere on "
                                                  "their path): not reported as slow links");
}

} // namespace twinscale::diagnose
