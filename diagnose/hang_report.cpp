#include "diagnose/hang_report.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "diagnose/error.hpp"
#include "diagnose/run_data.hpp"
#include "records/run_dir.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::diagnose {

using nlohmann::json;
using records::RankState;
using records::RunStatus;
using records::WaitingOp;
namespace fs = std::filesystem;

namespace {

/// The channel name the peer uses for the op matching `op` (p2p: reversed direction).
std::string peer_channel(const WaitingOp& op, int64_t self) {
  if (op.channel.rfind("recv:", 0) == 0 || op.channel.rfind("send:", 0) == 0) {
    const std::string dir = op.channel.substr(0, 4) == "recv" ? "send:" : "recv:";
    return dir + std::string(schedules::to_string(op.group)) + ":" + std::to_string(self);
  }
  return op.channel;
}

std::string join(const std::vector<int64_t>& v) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
  return s;
}

} // namespace

bool HangReport::all_completed() const {
  if (!silent.empty()) return false;
  for (const RankState& s : states)
    if (s.status != RunStatus::Completed) return false;
  return true;
}

HangReport analyse_run_dir(const std::string& dir, int64_t world) {
  if (!fs::is_directory(dir)) throw DiagnoseError("run directory " + dir + " does not exist");
  HangReport r;
  r.world = world;
  std::map<int64_t, const RankState*> by_rank;
  for (int64_t rank = 0; rank < world; ++rank) {
    const std::string path = records::rank_state_path(dir, rank);
    if (!fs::exists(path)) {
      r.silent.push_back(rank);
      continue;
    }
    r.states.push_back(records::read_rank_state(path));
    if (r.states.back().rank != rank)
      throw DiagnoseError("rank state " + path + ": holds rank " + std::to_string(r.states.back().rank) +
                          ", expected " + std::to_string(rank));
  }
  for (const RankState& s : r.states) by_rank[s.rank] = &s;

  std::map<int64_t, std::set<int64_t>> waited_on_by;
  for (const RankState& s : r.states) {
    for (const WaitingOp& p : s.waiting) {
      Wait w{s.rank, p, {}};
      for (int64_t q : p.peers) {
        if (q == s.rank) continue;
        auto it = by_rank.find(q);
        bool arrived = false;
        if (it != by_rank.end()) {
          const auto& issued = it->second->issued;
          auto c = issued.find(peer_channel(p, s.rank));
          arrived = c != issued.end() && c->second > p.sequence;
        }
        if (!arrived) {
          w.not_arrived.push_back(q);
          waited_on_by[q].insert(s.rank);
        }
      }
      r.waits.push_back(std::move(w));
    }
  }
  for (const auto& [rank, waiters] : waited_on_by) {
    Suspect sp;
    sp.rank = rank;
    sp.logged_nothing = !by_rank.count(rank);
    sp.waited_on_by.assign(waiters.begin(), waiters.end());
    r.suspects.push_back(std::move(sp));
  }
  for (int64_t rank : r.silent) // silent ranks nobody named yet are suspects too
    if (!waited_on_by.count(rank)) r.suspects.push_back(Suspect{rank, true, {}});
  std::stable_sort(r.suspects.begin(), r.suspects.end(), [](const Suspect& a, const Suspect& b) {
    if (a.logged_nothing != b.logged_nothing) return a.logged_nothing;
    if (a.waited_on_by.size() != b.waited_on_by.size()) return a.waited_on_by.size() > b.waited_on_by.size();
    return a.rank < b.rank;
  });
  return r;
}

std::string HangReport::summary() const {
  std::ostringstream o;
  if (all_completed()) {
    o << "all " << world << " ranks completed\n";
    return o.str();
  }
  for (const Suspect& s : suspects) {
    o << "suspect rank " << s.rank << ": "
      << (s.logged_nothing ? "logged nothing (dead or hung)" : "logged, but others wait for it") << "; waited on by "
      << s.waited_on_by.size() << " rank(s) [" << join(s.waited_on_by) << "]\n";
  }
  for (const Wait& w : waits) {
    o << "rank " << w.rank << " waits for op " << w.op.op_index << " " << w.op.name << " ("
      << schedules::to_string(w.op.kind) << " on " << w.op.channel << " #" << w.op.sequence << ", " << std::fixed;
    o.precision(3);
    o << w.op.waiting_s << " s); not arrived: [" << join(w.not_arrived) << "]\n";
  }
  return o.str();
}

void write_hang_report(const HangReport& r, const std::string& path) {
  json j;
  j["world"] = r.world;
  j["all_completed"] = r.all_completed();
  j["silent_ranks"] = r.silent;
  j["suspects"] = json::array();
  for (const Suspect& s : r.suspects)
    j["suspects"].push_back({{"rank", s.rank}, {"logged_nothing", s.logged_nothing}, {"waited_on_by", s.waited_on_by}});
  j["waits"] = json::array();
  for (const Wait& w : r.waits)
    j["waits"].push_back({{"rank", w.rank},
                          {"op_index", w.op.op_index},
                          {"name", w.op.name},
                          {"kind", std::string(schedules::to_string(w.op.kind))},
                          {"channel", w.op.channel},
                          {"sequence", w.op.sequence},
                          {"waiting_s", w.op.waiting_s},
                          {"not_arrived", w.not_arrived}});
  j["ranks"] = json::array();
  for (const RankState& s : r.states)
    j["ranks"].push_back({{"rank", s.rank},
                          {"status", std::string(records::to_string(s.status))},
                          {"ops_completed", s.ops_completed},
                          {"ops_total", s.ops_total}});
  try {
    schedules::write_output_file(path, j.dump(1) + "\n");
  } catch (const schedules::OutputFileError& e) {
    throw DiagnoseError(e.what());
  }
}

std::string report_run_dir(const std::string& dir, int64_t world, int64_t rank) {
  const HangReport report = analyse_run_dir(dir, world);
  write_hang_report(report, (fs::path(dir) / "report.json").string());
  return !report.states.empty() && report.states.front().rank == rank ? report.summary() : std::string();
}

void add_hang_evidence(const std::string& dir, int64_t world, RunData& data) {
  HangReport r = analyse_run_dir(dir, world);
  HangEvidence& h = data.hang;
  h.present = true;
  h.world = world;
  h.silent = r.silent;
  std::vector<std::string> hosts(static_cast<size_t>(world));
  for (const RankState& s : r.states) {
    hosts[static_cast<size_t>(s.rank)] = s.host;
    if (s.status != RunStatus::Completed) h.incomplete.push_back(s.rank);
  }
  h.waits = std::move(r.waits);
  if (data.ranks.empty())
    for (int64_t rank = 0; rank < world; ++rank) data.ranks.push_back(RankSeries{rank, rank, -1, {}});
  set_hosts(data, hosts);
}

} // namespace twinscale::diagnose
