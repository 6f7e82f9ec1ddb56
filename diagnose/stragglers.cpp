// Stragglers, slow hosts and jitter: each rank's own (compute) time per step against the
// median of its peers (same program, i.e. same pipeline stage), scaled by their MAD.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>

#include "diagnose/diagnosis.hpp"
#include "diagnose/error.hpp"

namespace twinscale::diagnose {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return 0.5 * (lo + hi);
}

double mad(const std::vector<double>& v, double med) {
  std::vector<double> dev;
  dev.reserve(v.size());
  for (double x : v) dev.push_back(std::fabs(x - med));
  return median(std::move(dev));
}

namespace {

double own_time(const RunData& d, const RankSeries& r, size_t step) {
  double s = 0;
  for (size_t p = 0; p < d.phases.size(); ++p)
    if (d.own_time[p]) s += r.step_phase_s[step][p];
  return s;
}

/// Per peer group and step: the median and robust scale of `value(rank, step)`.
struct PeerStats {
  std::vector<std::vector<double>> med, scale; // [group][step]
  std::vector<int64_t> size;
};

template <class F>
PeerStats peer_stats(const RunData& d, int64_t groups, const DiagnoseOptions& o, F value) {
  PeerStats st;
  st.med.assign(static_cast<size_t>(groups), std::vector<double>(static_cast<size_t>(d.steps()), 0));
  st.scale = st.med;
  st.size.assign(static_cast<size_t>(groups), 0);
  std::vector<std::vector<const RankSeries*>> members(static_cast<size_t>(groups));
  for (const RankSeries& r : d.ranks) members[static_cast<size_t>(r.peer_group)].push_back(&r);
  for (size_t g = 0; g < members.size(); ++g) {
    st.size[g] = static_cast<int64_t>(members[g].size());
    for (size_t s = 0; s < static_cast<size_t>(d.steps()); ++s) {
      std::vector<double> v;
      v.reserve(members[g].size());
      for (const RankSeries* r : members[g]) v.push_back(value(*r, s));
      const double m = median(v);
      st.med[g][s] = m;
      st.scale[g][s] = std::max(1.4826 * mad(v, m), o.scale_floor * m);
    }
  }
  return st;
}

double rel(double x, double m) { return m > 0 ? x / m - 1 : 0; }

std::string percent(double f) {
  std::ostringstream o;
  o.setf(std::ios::fixed);
  o.precision(1);
  o << 100 * f << " %";
  return o.str();
}

void add_host_findings(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  std::map<int64_t, std::vector<int64_t>> ranks_of_host, slow_of_host;
  std::map<int64_t, int64_t> steps_of_host; // steps until its last straggler was flagged
  for (const RankSeries& r : d.ranks)
    if (r.host >= 0) ranks_of_host[r.host].push_back(r.rank);
  for (const Finding& f : out.findings)
    if (f.kind == FindingKind::Straggler && d.ranks[static_cast<size_t>(f.ranks[0])].host >= 0) {
      const int64_t h = d.ranks[static_cast<size_t>(f.ranks[0])].host;
      slow_of_host[h].push_back(f.ranks[0]);
      steps_of_host[h] = std::max(steps_of_host[h], f.detected_after_steps);
    }
  for (const auto& [host, slow] : slow_of_host) {
    const auto& all = ranks_of_host[host];
    if (all.size() < 2 || static_cast<double>(slow.size()) < o.host_fraction * static_cast<double>(all.size()))
      continue;
    Finding f;
    f.kind = FindingKind::SlowHost;
    f.ranks = slow;
    f.host = d.hosts[static_cast<size_t>(host)];
    std::vector<double> ex;
    for (int64_t r : all) ex.push_back(out.scores[static_cast<size_t>(r)].excess);
    f.excess = median(ex);
    std::vector<double> zs;
    for (int64_t r : all) zs.push_back(out.scores[static_cast<size_t>(r)].z);
    f.score = median(zs);
    f.detected_after_steps = steps_of_host[host];
    f.detail = std::to_string(slow.size()) + " of its " + std::to_string(all.size()) +
               " ranks are stragglers; median excess " + percent(f.excess);
    out.findings.push_back(std::move(f));
  }
}

/// The "became slower" score of every rank (DiagnoseOptions::baseline_steps): its excess
/// over its peers after the baseline minus during it, and that change's robust z among
/// its peers. Also the first count of post-baseline steps at which it would be flagged.
struct Onset {
  std::vector<double> change, z;
  std::vector<int64_t> detected_after;
};

Onset onset_scores(const std::vector<std::vector<double>>& ex, const RunData& d, const DiagnoseOptions& o) {
  const size_t k = static_cast<size_t>(o.baseline_steps);
  Onset on;
  on.change.assign(ex.size(), 0);
  on.z.assign(ex.size(), 0);
  on.detected_after.assign(ex.size(), 0);
  auto change_after = [&](size_t r, size_t upto) {
    const auto& e = ex[r];
    return median(std::vector<double>(e.begin() + static_cast<std::ptrdiff_t>(k),
                                      e.begin() + static_cast<std::ptrdiff_t>(upto))) -
           median(std::vector<double>(e.begin(), e.begin() + static_cast<std::ptrdiff_t>(k)));
  };
  std::map<int64_t, std::vector<size_t>> members;
  for (size_t r = 0; r < d.ranks.size(); ++r) members[d.ranks[r].peer_group].push_back(r);
  const size_t steps = ex.empty() ? 0 : ex.front().size();
  for (const auto& [group, rs] : members) {
    std::vector<double> ch;
    for (size_t r : rs) ch.push_back(on.change[r] = change_after(r, steps));
    const double m = median(ch);
    const double scale = std::max(1.4826 * mad(ch, m), o.scale_floor);
    for (size_t r : rs) {
      on.change[r] -= m;
      on.z[r] = on.change[r] / scale;
      for (size_t upto = k + 1; upto <= steps && !on.detected_after[r]; ++upto) {
        const double c = change_after(r, upto) - m;
        if (c >= o.min_excess && c / scale >= o.min_z) on.detected_after[r] = static_cast<int64_t>(upto - k);
      }
    }
  }
  return on;
}

} // namespace

void find_stragglers(const RunData& d, const DiagnoseOptions& o, Diagnosis& out) {
  const size_t steps = static_cast<size_t>(d.steps());
  out.scores.assign(d.ranks.size(), RankScore{});
  if (steps == 0) return;
  int64_t groups = 0;
  for (const RankSeries& r : d.ranks) groups = std::max(groups, r.peer_group + 1);
  const PeerStats own = peer_stats(d, groups, o, [&](const RankSeries& r, size_t s) { return own_time(d, r, s); });
  std::vector<PeerStats> phase;
  for (size_t p = 0; p < d.phases.size(); ++p)
    phase.push_back(peer_stats(d, groups, o, [&](const RankSeries& r, size_t s) { return r.step_phase_s[s][p]; }));
  if (o.baseline_steps < 0 || (o.baseline_steps > 0 && static_cast<size_t>(o.baseline_steps) >= steps))
    throw DiagnoseError("diagnose: --baseline-steps " + std::to_string(o.baseline_steps) +
                        " needs more steps than that (" + d.source + " has " + std::to_string(steps) + "; valid: 0..." +
                        std::to_string(steps - 1) + ")");
  std::vector<std::vector<double>> all_ex(d.ranks.size());
  if (o.baseline_steps > 0)
    for (size_t i = 0; i < d.ranks.size(); ++i)
      for (size_t s = 0; s < steps; ++s) {
        const size_t g = static_cast<size_t>(d.ranks[i].peer_group);
        all_ex[i].push_back(rel(own_time(d, d.ranks[i], s), own.med[g][s]));
      }
  const Onset onset = o.baseline_steps > 0 ? onset_scores(all_ex, d, o) : Onset{};
  int64_t lonely = 0;
  for (const RankSeries& r : d.ranks) {
    const size_t g = static_cast<size_t>(r.peer_group);
    RankScore& sc = out.scores[static_cast<size_t>(r.rank)];
    sc.rank = r.rank;
    sc.peer_group = r.peer_group;
    if (r.host >= 0) sc.host = d.hosts[static_cast<size_t>(r.host)];
    if (own.size[g] < 3) { // nobody to compare with
      ++lonely;
      continue;
    }
    std::vector<double> ex, z;
    int64_t detected_after = 0;
    std::vector<size_t> jitter_steps;
    for (size_t s = 0; s < steps; ++s) {
      const double x = own_time(d, r, s);
      ex.push_back(rel(x, own.med[g][s]));
      z.push_back(own.scale[g][s] > 0 ? (x - own.med[g][s]) / own.scale[g][s] : 0);
      if (ex.back() >= 2 * o.min_excess && z.back() >= o.min_z) jitter_steps.push_back(s);
      if (!detected_after && median(ex) >= o.min_excess && median(z) >= o.min_z)
        detected_after = static_cast<int64_t>(s + 1);
    }
    sc.excess = median(ex);
    sc.z = median(z);
    if (o.baseline_steps > 0) { // became slower than it was (baseline_steps)
      sc.excess = onset.change[static_cast<size_t>(r.rank)];
      sc.z = onset.z[static_cast<size_t>(r.rank)];
      detected_after = onset.detected_after[static_cast<size_t>(r.rank)];
    }
    for (size_t p = 0; p < d.phases.size(); ++p) {
      std::vector<double> pe;
      for (size_t s = 0; s < steps; ++s) pe.push_back(rel(r.step_phase_s[s][p], phase[p].med[g][s]));
      sc.phase_excess.push_back(median(std::move(pe)));
    }
    Finding f;
    f.ranks = {r.rank};
    if (r.host >= 0) f.host = d.hosts[static_cast<size_t>(r.host)];
    if (sc.excess >= o.min_excess && sc.z >= o.min_z) {
      f.kind = FindingKind::Straggler;
      f.excess = sc.excess;
      f.score = sc.z;
      f.detected_after_steps = detected_after;
      size_t worst = 0;
      for (size_t p = 1; p < d.phases.size(); ++p)
        if (d.own_time[p] && sc.phase_excess[p] > sc.phase_excess[worst]) worst = p;
      f.detail =
          o.baseline_steps > 0
              ? "own time rose " + percent(sc.excess) + " against its first " + std::to_string(o.baseline_steps) +
                    " step(s), relative to its " + std::to_string(own.size[g] - 1) + " peers"
              : "own time " + percent(sc.excess) + " above its " + std::to_string(own.size[g] - 1) + " peers' median";
      f.detail += " (worst phase " + d.phases[worst] + " " + percent(sc.phase_excess[worst]) + ")";
      out.findings.push_back(std::move(f));
    } else if (!jitter_steps.empty() && steps >= 3) {
      f.kind = FindingKind::Jitter;
      std::vector<double> worst;
      for (size_t s : jitter_steps) worst.push_back(ex[s]);
      f.excess = *std::max_element(worst.begin(), worst.end());
      f.score = static_cast<double>(jitter_steps.size());
      f.detail = "slow on " + std::to_string(jitter_steps.size()) + " of " + std::to_string(steps) + " steps (up to " +
                 percent(f.excess) + "), normal otherwise";
      out.findings.push_back(std::move(f));
    }
  }
  if (lonely)
    out.notes.push_back(std::to_string(lonely) +
                        " rank(s) have fewer than 2 peers running the same program: " + "not scored for stragglers");
  add_host_findings(d, o, out);
}

} // namespace twinscale::diagnose
