// Late launchers (M20) and slow links, from the communication ops of a trace.
#include <algorithm>
#include <map>
#include <sstream>

#include "diagnose/diagnosis.hpp"

namespace twinscale::diagnose {

namespace {

bool is_collective(schedules::Stream s) { return s == schedules::Stream::TpComm || s == schedules::Stream::DpComm; }

} // namespace

void find_late_launchers(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  if (d.comms.empty()) return;
  // Per (rank, step): the last collective the rank launched, and the step's span.
  std::map<std::pair<int64_t, int32_t>, const CommEvent*> last;
  std::map<std::pair<int64_t, int32_t>, std::pair<double, double>> span;
  for (const CommEvent& c : d.comms) {
    const auto key = std::make_pair(c.rank, c.step);
    auto [sp, fresh] = span.try_emplace(key, c.start_s, c.end_s);
    if (!fresh) sp->second = {std::min(sp->second.first, c.start_s), std::max(sp->second.second, c.end_s)};
    if (!is_collective(c.stream)) continue;
    const CommEvent*& l = last[key];
    if (!l || c.op_index > l->op_index) l = &c;
  }
  // Peers' median launch of that collective, per (peer group, step).
  std::map<std::pair<int64_t, int32_t>, std::vector<double>> starts, spans;
  for (const auto& [key, c] : last) {
    const int64_t g = d.ranks[static_cast<size_t>(key.first)].peer_group;
    starts[{g, key.second}].push_back(c->start_s);
    spans[{g, key.second}].push_back(span[key].second - span[key].first);
  }
  std::map<std::pair<int64_t, int32_t>, std::pair<double, double>> ref; // median start, median span
  for (const auto& [k, v] : starts) ref[k] = {median(v), median(spans[k])};
  std::map<int64_t, std::vector<std::pair<int32_t, double>>> late_of_rank; // rank → (step, lateness)
  for (const auto& [key, c] : last) {
    const int64_t g = d.ranks[static_cast<size_t>(key.first)].peer_group;
    if (starts[{g, key.second}].size() < 3) continue;
    const auto [m, step_s] = ref[{g, key.second}];
    const double late = c->start_s - m;
    if (step_s > 0 && late >= o.late_fraction * step_s) late_of_rank[key.first].push_back({key.second, late / step_s});
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
  if (d.comms.empty()) return;
  if (!d.layout) {
    out.notes.push_back("slow links: the layout (--layout TPxPPxDP) is needed to know each collective's group");
    return;
  }
  const schedules::Layout& L = *d.layout;
  if (L.world() != static_cast<int64_t>(d.ranks.size())) {
    out.notes.push_back("slow links: --layout does not match the trace's " + std::to_string(d.ranks.size()) +
                        " ranks; not analysed");
    return;
  }
  // One collective instance: (stream, step, occurrence, group leader) → arrivals and end.
  struct Instance {
    double last_start = 0, end = 0;
    int64_t members = 0;
    std::string name;
  };
  std::map<std::tuple<int, int32_t, int64_t, int64_t>, Instance> inst;
  for (const CommEvent& c : d.comms) {
    if (!is_collective(c.stream) || c.failed) continue;
    const auto kind = c.stream == schedules::Stream::TpComm ? schedules::GroupKind::Tp : schedules::GroupKind::Dp;
    const int64_t leader = L.group_members(kind, c.rank).front();
    Instance& i = inst[{static_cast<int>(c.stream), c.step, c.occurrence, leader}];
    i.last_start = i.members ? std::max(i.last_start, c.start_s) : c.start_s;
    i.end = std::max(i.end, c.end_s);
    i.name = c.name;
    ++i.members;
  }
  // Compare each instance with the same collective of the other groups of its stage.
  std::map<std::tuple<int, int32_t, int64_t, int64_t>, std::vector<double>> peers; // key with leader → stage
  for (const auto& [k, i] : inst)
    peers[{std::get<0>(k), std::get<1>(k), std::get<2>(k), L.coord(std::get<3>(k)).pp}].push_back(i.end - i.last_start);
  std::map<std::pair<int, int64_t>, std::vector<double>> excess_of_group; // (stream, leader) → excesses
  std::map<std::pair<int, int64_t>, std::string> name_of_group;
  for (const auto& [k, i] : inst) {
    const auto& v = peers[{std::get<0>(k), std::get<1>(k), std::get<2>(k), L.coord(std::get<3>(k)).pp}];
    if (v.size() < 3) continue;
    const double m = median(v);
    if (m <= 0) continue;
    excess_of_group[{std::get<0>(k), std::get<3>(k)}].push_back((i.end - i.last_start) / m - 1);
    name_of_group[{std::get<0>(k), std::get<3>(k)}] = i.name;
  }
  for (const auto& [k, ex] : excess_of_group) {
    const double typical = median(ex);
    if (typical < o.link_excess) continue;
    const auto kind =
        k.first == static_cast<int>(schedules::Stream::TpComm) ? schedules::GroupKind::Tp : schedules::GroupKind::Dp;
    Finding f;
    f.kind = FindingKind::SlowLink;
    f.ranks = L.group_members(kind, k.second);
    f.excess = typical;
    f.score = static_cast<double>(ex.size());
    std::ostringstream det;
    det.setf(std::ios::fixed);
    det.precision(1);
    det << (kind == schedules::GroupKind::Tp ? "tp" : "dp") << " group of rank " << k.second << ": collectives take "
        << 100 * typical << " % longer than the same collectives of other groups (median of " << ex.size() << ", e.g. "
        << name_of_group[k] << ")";
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
