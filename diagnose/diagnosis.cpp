#include "diagnose/diagnosis.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace twinscale::diagnose {

std::string_view to_string(FindingKind k) {
  switch (k) {
  case FindingKind::Hang: return "hang";
  case FindingKind::FailedOps: return "failed_ops";
  case FindingKind::Straggler: return "straggler";
  case FindingKind::SlowHost: return "slow_host";
  case FindingKind::SlowLink: return "slow_link";
  case FindingKind::Jitter: return "jitter";
  case FindingKind::LateLauncher: return "late_launcher";
  }
  return "?";
}

namespace {

std::string join(const std::vector<int64_t>& v, size_t max = 16) {
  std::string s;
  for (size_t i = 0; i < v.size() && i < max; ++i) s += (i ? "," : "") + std::to_string(v[i]);
  if (v.size() > max) s += ",… (" + std::to_string(v.size()) + ")";
  return s;
}

} // namespace

namespace {

/// "0-36,38-127": sorted ranks as ranges, for the ranks a hang blocks.
std::string ranges(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(v[i]) + (j > i ? "-" + std::to_string(v[j]) : "");
    i = j + 1;
  }
  return s;
}

/// Every rank whose chain of waits reaches `root` (`waited_by`: rank → ranks that wait on it).
std::vector<int64_t> blocked_behind(int64_t root, const std::map<int64_t, std::set<int64_t>>& waited_by) {
  std::set<int64_t> seen{root};
  std::vector<int64_t> todo{root};
  while (!todo.empty()) {
    const int64_t r = todo.back();
    todo.pop_back();
    const auto it = waited_by.find(r);
    if (it == waited_by.end()) continue;
    for (int64_t q : it->second)
      if (seen.insert(q).second) todo.push_back(q);
  }
  seen.erase(root);
  return {seen.begin(), seen.end()};
}

} // namespace

// One hang is one finding: its root (a rank peers wait on that waits on no one itself:
// silent, or stopped in place), with every rank blocked behind it, directly or through a
// chain of waits, listed under it. Ranks that wait on each other in a cycle with no root
// (a deadlock) are one finding too.
void find_hangs(const RunData& d, Diagnosis& out) {
  const HangEvidence& h = d.hang;
  if (!h.present || (h.silent.empty() && h.incomplete.empty())) return;
  // Who is waited on, by whom, in which op.
  std::map<int64_t, std::set<int64_t>> waited_by, waits_for;
  std::map<int64_t, std::vector<const Wait*>> waits_on;
  for (const Wait& w : h.waits)
    for (int64_t q : w.not_arrived) {
      waited_by[q].insert(w.rank);
      waits_for[w.rank].insert(q);
      waits_on[q].push_back(&w);
    }
  std::set<int64_t> culprits;
  for (int64_t r : h.silent) culprits.insert(r);
  for (const auto& [r, by] : waited_by) culprits.insert(r);
  if (culprits.empty()) { // everyone stopped, nobody names anyone: report the incomplete ranks
    Finding f;
    f.kind = FindingKind::Hang;
    f.ranks = h.incomplete;
    f.detail = "ranks stopped before completing, but none waits on another (an op failed or was aborted)";
    out.findings.push_back(std::move(f));
    return;
  }
  const std::set<int64_t> silent(h.silent.begin(), h.silent.end());
  std::vector<int64_t> roots;
  for (int64_t r : culprits)
    if (silent.count(r) || !waits_for.count(r)) roots.push_back(r);
  std::set<int64_t> covered(roots.begin(), roots.end());
  std::vector<Finding> found;
  for (int64_t r : roots) {
    Finding f;
    f.kind = FindingKind::Hang;
    f.ranks = {r};
    if (r < static_cast<int64_t>(d.ranks.size()) && d.ranks[static_cast<size_t>(r)].host >= 0)
      f.host = d.hosts[static_cast<size_t>(d.ranks[static_cast<size_t>(r)].host)]; // where to look
    f.blocked = blocked_behind(r, waited_by);
    covered.insert(f.blocked.begin(), f.blocked.end());
    f.score = static_cast<double>(f.blocked.size());
    const auto& by = waited_by[r];
    std::ostringstream det;
    det << (silent.count(r) ? "logged nothing (stopped, hung or dead)" : "logged a state, but peers wait for it");
    if (!by.empty()) {
      std::map<std::string, int64_t> ops; // what the others are stuck in
      for (const Wait* w : waits_on[r])
        ++ops[w->op.name + " (" + std::string(schedules::to_string(w->op.kind)) + " on " + w->op.channel + " #" +
              std::to_string(w->op.sequence) + ")"];
      det << "; " << by.size() << " rank(s) wait on it [" << join({by.begin(), by.end()}) << "] in ";
      bool first = true;
      for (const auto& [op, n] : ops) {
        det << (first ? "" : ", ") << op << " ×" << n;
        first = false;
      }
    }
    det << "; " << f.blocked.size() << " rank(s) blocked behind it in all: " << ranges(f.blocked);
    f.detail = det.str();
    found.push_back(std::move(f));
  }
  std::vector<int64_t> cycle; // waited on, but every chain from them loops back: a deadlock
  for (int64_t r : culprits)
    if (!covered.count(r)) cycle.push_back(r);
  if (!cycle.empty()) {
    Finding f;
    f.kind = FindingKind::Hang;
    f.ranks = cycle;
    for (int64_t r : cycle)
      for (int64_t q : blocked_behind(r, waited_by))
        if (!covered.count(q) && !std::binary_search(cycle.begin(), cycle.end(), q)) f.blocked.push_back(q);
    std::sort(f.blocked.begin(), f.blocked.end());
    f.blocked.erase(std::unique(f.blocked.begin(), f.blocked.end()), f.blocked.end());
    f.score = static_cast<double>(f.blocked.size() + cycle.size());
    f.detail = std::to_string(cycle.size()) +
               " rank(s) wait on each other in a cycle (a deadlock: no rank of it waits on "
               "one outside)" +
               (f.blocked.empty() ? ""
                                  : "; " + std::to_string(f.blocked.size()) +
                                        " more rank(s) blocked behind them: " + ranges(f.blocked));
    found.push_back(std::move(f));
  }
  std::stable_sort(found.begin(), found.end(), [&](const Finding& a, const Finding& b) {
    const bool sa = silent.count(a.ranks[0]), sb = silent.count(b.ranks[0]);
    if (sa != sb) return sa;
    return a.score > b.score;
  });
  for (Finding& f : found) out.findings.push_back(std::move(f));
}

Diagnosis diagnose_run(const RunData& d, const DiagnoseOptions& o) {
  Diagnosis out;
  out.source = d.source;
  out.ranks = static_cast<int64_t>(d.ranks.size());
  out.steps = d.steps();
  out.notes = d.notes;
  find_hangs(d, out);
  find_failed_ops(d, out);
  find_stragglers(d, o, out);
  find_slow_links(d, o, out);
  find_slow_links_from_loads(d, o, out);
  find_late_launchers(d, o, out);
  std::stable_sort(out.findings.begin(), out.findings.end(), [](const Finding& a, const Finding& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.kind == FindingKind::Hang) return false; // keep the hang order
    if (a.score != b.score) return a.score > b.score;
    return a.ranks < b.ranks;
  });
  return out;
}

std::string format_table(const Diagnosis& d, size_t max_rows) {
  std::ostringstream o;
  o << "diagnosis of " << d.source << ": " << d.ranks << " ranks, " << d.steps << " step(s), " << d.findings.size()
    << " finding(s)\n";
  for (const std::string& n : d.notes) o << "note: " << n << "\n";
  if (d.findings.empty()) {
    o << "nothing found\n";
    return o.str();
  }
  char line[256];
  std::snprintf(line, sizeof line, "%-14s %-24s %-12s %9s %8s %6s  %s\n", "kind", "ranks", "host", "excess", "score",
                "steps", "detail");
  o << line;
  size_t shown = 0;
  for (const Finding& f : d.findings) {
    if (shown++ == max_rows) {
      o << "… " << d.findings.size() - max_rows << " more (--json lists all)\n";
      break;
    }
    std::snprintf(line, sizeof line, "%-14s %-24s %-12s %8.2f%% %8.2f %6lld  ", std::string(to_string(f.kind)).c_str(),
                  join(f.ranks, 4).c_str(), f.host.empty() ? "-" : f.host.c_str(), 100 * f.excess, f.score,
                  static_cast<long long>(f.detected_after_steps));
    o << line << f.detail << "\n";
  }
  return o.str();
}

std::string to_json(const Diagnosis& d) {
  nlohmann::json j;
  j["format"] = "twinscale-diagnosis";
  j["format_version"] = 2; // 2: rank_scores are objects with named fields (1: arrays)
  j["source"] = d.source;
  j["ranks"] = d.ranks;
  j["steps"] = d.steps;
  j["notes"] = d.notes;
  j["findings"] = nlohmann::json::array();
  for (const Finding& f : d.findings)
    j["findings"].push_back({{"kind", std::string(to_string(f.kind))},
                             {"ranks", f.ranks},
                             {"host", f.host},
                             {"excess", f.excess},
                             {"score", f.score},
                             {"detected_after_steps", f.detected_after_steps},
                             {"detail", f.detail}});
  for (size_t i = 0; i < d.findings.size(); ++i) { // only link findings name a link
    if (!d.findings[i].link.empty()) j["findings"][i]["link"] = d.findings[i].link;
    if (d.findings[i].kind == FindingKind::Hang) j["findings"][i]["blocked_ranks"] = d.findings[i].blocked;
  }
  j["rank_scores"] = nlohmann::json::array();
  for (const RankScore& s : d.scores)
    j["rank_scores"].push_back({{"rank", s.rank},
                                {"host", s.host},
                                {"peer_group", s.peer_group},
                                {"excess", s.excess},
                                {"z", s.z},
                                {"late_launches", s.late_launches}});
  return j.dump(1) + "\n";
}

} // namespace twinscale::diagnose
