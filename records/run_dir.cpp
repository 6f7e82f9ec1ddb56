#include "records/run_dir.hpp"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "records/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::records {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

template <class E>
E parse_enum(const std::string& name, int count, const std::string& path, const char* key) {
  for (int i = 0; i < count; ++i)
    if (schedules::to_string(static_cast<E>(i)) == name) return static_cast<E>(i);
  throw RecordError("rank state " + path + ": \"" + key + "\" has unknown value \"" + name + "\"");
}

RunStatus parse_status(const std::string& name, const std::string& path) {
  for (RunStatus s : {RunStatus::Completed, RunStatus::TimedOut, RunStatus::OpFailed, RunStatus::Aborted})
    if (to_string(s) == name) return s;
  throw RecordError("rank state " + path + ": \"status\" has unknown value \"" + name +
                    "\"; valid: completed, timed_out, op_failed, aborted");
}

json waiting_json(const WaitingOp& p) {
  return {{"op_index", p.op_index},
          {"name", p.name},
          {"kind", std::string(schedules::to_string(p.kind))},
          {"group", std::string(schedules::to_string(p.group))},
          {"stream", std::string(schedules::to_string(p.stream))},
          {"channel", p.channel},
          {"sequence", p.sequence},
          {"peers", p.peers},
          {"waiting_s", p.waiting_s}};
}

WaitingOp waiting_from_json(const json& w, const std::string& path) {
  WaitingOp p;
  p.op_index = w.at("op_index").get<uint32_t>();
  p.name = w.at("name").get<std::string>();
  p.kind = parse_enum<schedules::OpKind>(w.at("kind").get<std::string>(), static_cast<int>(schedules::OpKind::Recv) + 1,
                                         path, "kind");
  p.group = parse_enum<schedules::GroupKind>(w.at("group").get<std::string>(),
                                             static_cast<int>(schedules::GroupKind::World) + 1, path, "group");
  p.stream = parse_enum<schedules::Stream>(w.at("stream").get<std::string>(), schedules::kStreamCount, path, "stream");
  p.channel = w.at("channel").get<std::string>();
  p.sequence = w.at("sequence").get<int64_t>();
  p.peers = w.at("peers").get<std::vector<int64_t>>();
  p.waiting_s = w.at("waiting_s").get<double>();
  return p;
}

} // namespace

std::string rank_state_path(const std::string& dir, int64_t rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string();
}

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
  for (const WaitingOp& p : st.waiting) j["waiting"].push_back(waiting_json(p));
  j["init_phases"] = json::array();
  for (const InitPhase& p : st.init_phases) j["init_phases"].push_back({p.name, p.seconds});
  j["events"] = json::array();
  for (const schedules::TraceEvent& e : st.events) j["events"].push_back({e.op_index, e.start_s, e.end_s, e.failed});
  std::error_code ec;
  fs::create_directories(dir, ec);
  try {
    schedules::write_output_file(rank_state_path(dir, st.rank), j.dump() + "\n");
  } catch (const schedules::OutputFileError& e) {
    throw RecordError(e.what());
  }
}

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
    throw RecordError("rank state " + std::string(e.what()));
  } catch (const schedules::JsonDocumentError& e) {
    throw RecordError(e.what());
  }
}
} // namespace

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
    for (const json& w : j.at("waiting")) st.waiting.push_back(waiting_from_json(w, path));
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
    throw RecordError("rank state " + path + ": malformed: " + e.what());
  }
  return st;
}

} // namespace twinscale::records
