#include "backend/hang_report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "backend/detail/atomic_file.hpp"
#include "backend/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"

namespace twinscale::backend {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

template <class E>
E parse_enum(const std::string& name, int count, const std::string& path, const char* key) {
  for (int i = 0; i < count; ++i)
    if (schedules::to_string(static_cast<E>(i)) == name) return static_cast<E>(i);
  throw BackendError("rank state " + path + ": \"" + key + "\" has unknown value \"" + name + "\"");
}

RunStatus parse_status(const std::string& name, const std::string& path) {
  for (RunStatus s : {RunStatus::Completed, RunStatus::TimedOut, RunStatus::OpFailed, RunStatus::Aborted})
    if (to_string(s) == name) return s;
  throw BackendError("rank state " + path + ": \"status\" has unknown value \"" + name +
                     "\"; valid: completed, timed_out, op_failed, aborted");
}

std::string rank_file(const std::string& dir, int64_t rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string();
}

/// The channel name the peer uses for the op matching `op` (p2p: reversed direction).
std::string peer_channel(const PendingOp& op, int64_t self) {
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

namespace {
/// A rank state file parsed strictly: a regular file, no key given twice, none unknown.
json rank_state_json(const std::string& path) {
  const std::string label = "rank state " + path;
  try {
    json j = schedules::parse_json_document(schedules::read_input_file(path, "rank state", schedules::InputKind::Json),
                                            label);
    schedules::check_json_keys(j,
                               {"rank", "pid", "host", "status", "ops_completed", "ops_total", "elapsed_s", "issued",
                                "waiting", "init_phases", "events"},
                               label, "$");
    for (const json& w : j.value("waiting", json::array()))
      schedules::check_json_keys(
          w, {"op_index", "name", "kind", "group", "stream", "channel", "sequence", "peers", "waiting_s"}, label,
          "$.waiting[]");
    return j;
  } catch (const schedules::InputFileError& e) {
    throw BackendError("rank state " + std::string(e.what()));
  } catch (const schedules::JsonDocumentError& e) {
    throw BackendError(e.what());
  }
}
} // namespace

void write_rank_state(const std::string& dir, const RankState& st) {
  json j;
  j["rank"] = st.rank;
  j["pid"] = st.pid;
  j["host"] = st.host;
  j["status"] = std::string(to_string(st.status));
  j["ops_completed"] = st.ops_completed;
  j["ops_total"] = st.ops_total;
  j["elapsed_s"] = st.elapsed_s;
  j["issued"] = st.issued;
  j["waiting"] = json::array();
  for (const PendingOp& p : st.waiting)
    j["waiting"].push_back({{"op_index", p.op_index},
                            {"name", p.name},
                            {"kind", std::string(schedules::to_string(p.kind))},
                            {"group", std::string(schedules::to_string(p.group))},
                            {"stream", std::string(schedules::to_string(p.stream))},
                            {"channel", p.channel},
                            {"sequence", p.sequence},
                            {"peers", p.peers},
                            {"waiting_s", p.waiting_s}});
  j["init_phases"] = json::array();
  for (const InitPhase& p : st.init_phases) j["init_phases"].push_back({p.name, p.seconds});
  j["events"] = json::array();
  for (const schedules::TraceEvent& e : st.events) j["events"].push_back({e.op_index, e.start_s, e.end_s, e.failed});
  std::error_code ec;
  fs::create_directories(dir, ec);
  detail::write_file_atomically(rank_file(dir, st.rank), j.dump() + "\n");
}

RankState read_rank_state(const std::string& path) {
  RankState st;
  try {
    const json j = rank_state_json(path);
    st.rank = j.at("rank").get<int64_t>();
    st.pid = j.at("pid").get<int64_t>();
    st.host = j.at("host").get<std::string>();
    st.status = parse_status(j.at("status").get<std::string>(), path);
    st.ops_completed = j.at("ops_completed").get<uint32_t>();
    st.ops_total = j.at("ops_total").get<uint32_t>();
    st.elapsed_s = j.at("elapsed_s").get<double>();
    st.issued = j.at("issued").get<std::map<std::string, int64_t>>();
    for (const json& w : j.at("waiting")) {
      PendingOp p;
      p.op_index = w.at("op_index").get<uint32_t>();
      p.name = w.at("name").get<std::string>();
      p.kind = parse_enum<schedules::OpKind>(w.at("kind").get<std::string>(),
                                             static_cast<int>(schedules::OpKind::Recv) + 1, path, "kind");
      p.group = parse_enum<schedules::GroupKind>(w.at("group").get<std::string>(),
                                                 static_cast<int>(schedules::GroupKind::World) + 1, path, "group");
      p.stream =
          parse_enum<schedules::Stream>(w.at("stream").get<std::string>(), schedules::kStreamCount, path, "stream");
      p.channel = w.at("channel").get<std::string>();
      p.sequence = w.at("sequence").get<int64_t>();
      p.peers = w.at("peers").get<std::vector<int64_t>>();
      p.waiting_s = w.at("waiting_s").get<double>();
      st.waiting.push_back(std::move(p));
    }
    if (j.contains("init_phases"))
      for (const json& p : j.at("init_phases"))
        st.init_phases.push_back({p.at(0).get<std::string>(), p.at(1).get<double>()});
    for (const json& e : j.at("events")) {
      schedules::TraceEvent ev;
      ev.rank = st.rank;
      ev.op_index = e.at(0).get<uint32_t>();
      ev.start_s = e.at(1).get<double>();
      ev.end_s = e.at(2).get<double>();
      ev.failed = e.at(3).get<bool>();
      st.events.push_back(ev);
    }
  } catch (const json::exception& e) {
    throw BackendError("rank state " + path + ": malformed: " + e.what());
  }
  return st;
}

bool HangReport::all_completed() const {
  if (!silent.empty()) return false;
  for (const RankState& s : states)
    if (s.status != RunStatus::Completed) return false;
  return true;
}

HangReport analyse_run_dir(const std::string& dir, int64_t world) {
  if (!fs::is_directory(dir)) throw BackendError("run directory " + dir + " does not exist");
  HangReport r;
  r.world = world;
  std::map<int64_t, const RankState*> by_rank;
  for (int64_t rank = 0; rank < world; ++rank) {
    const std::string path = rank_file(dir, rank);
    if (!fs::exists(path)) {
      r.silent.push_back(rank);
      continue;
    }
    r.states.push_back(read_rank_state(path));
    if (r.states.back().rank != rank)
      throw BackendError("rank state " + path + ": holds rank " + std::to_string(r.states.back().rank) + ", expected " +
                         std::to_string(rank));
  }
  for (const RankState& s : r.states) by_rank[s.rank] = &s;

  std::map<int64_t, std::set<int64_t>> waited_on_by;
  for (const RankState& s : r.states) {
    for (const PendingOp& p : s.waiting) {
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
                          {"status", std::string(to_string(s.status))},
                          {"ops_completed", s.ops_completed},
                          {"ops_total", s.ops_total}});
  detail::write_file_atomically(path, j.dump(1) + "\n");
}

} // namespace twinscale::backend
