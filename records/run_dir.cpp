#include "records/run_dir.hpp"

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "records/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/limits.hpp"
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

[[noreturn]] void bad_value(const std::string& path, const std::string& at, const std::string& why) {
  throw RecordError("rank state " + path + ": " + at + ": " + why);
}

/// The value of `key` in object `obj` (at JSON path `at`), which must be there.
const json& field(const json& obj, const char* key, const std::string& path, const std::string& at) {
  const auto it = obj.find(key);
  if (it == obj.end()) bad_value(path, at, std::string("\"") + key + "\" is missing");
  return *it;
}

/// A whole number in [lo, hi] (a fraction, 1e300 or a negative count is refused, not
/// converted with undefined or wrapped results).
int64_t whole(const json& v, const std::string& path, const std::string& at, int64_t lo, int64_t hi) {
  if (!v.is_number_integer()) bad_value(path, at, std::string("must be a whole number, got ") + v.type_name());
  const bool out = v.is_number_unsigned() ? v.get<uint64_t>() > static_cast<uint64_t>(hi) ||
                                                (lo > 0 && v.get<uint64_t>() < static_cast<uint64_t>(lo))
                                          : v.get<int64_t>() < lo || v.get<int64_t>() > hi;
  if (out) bad_value(path, at, v.dump() + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v.get<int64_t>();
}

uint32_t index32(const json& v, const std::string& path, const std::string& at) {
  return static_cast<uint32_t>(whole(v, path, at, 0, UINT32_MAX));
}

/// A time in seconds: a finite number ≥ 0.
double seconds(const json& v, const std::string& path, const std::string& at) {
  if (!v.is_number()) bad_value(path, at, std::string("must be a number of seconds, got ") + v.type_name());
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) bad_value(path, at, v.dump() + " is not a time ≥ 0 s");
  return d;
}

WaitingOp waiting_from_json(const json& w, const std::string& path, const std::string& at) {
  WaitingOp p;
  p.op_index = index32(field(w, "op_index", path, at), path, at + ".op_index");
  p.name = w.at("name").get<std::string>();
  p.kind = parse_enum<schedules::OpKind>(w.at("kind").get<std::string>(), static_cast<int>(schedules::OpKind::Recv) + 1,
                                         path, "kind");
  p.group = parse_enum<schedules::GroupKind>(w.at("group").get<std::string>(),
                                             static_cast<int>(schedules::GroupKind::World) + 1, path, "group");
  p.stream = parse_enum<schedules::Stream>(w.at("stream").get<std::string>(), schedules::kStreamCount, path, "stream");
  p.channel = w.at("channel").get<std::string>();
  p.sequence = whole(field(w, "sequence", path, at), path, at + ".sequence", 0, INT64_MAX);
  const json& peers = field(w, "peers", path, at);
  if (!peers.is_array()) bad_value(path, at + ".peers", "must be an array of ranks");
  for (size_t i = 0; i < peers.size(); ++i)
    p.peers.push_back(whole(peers[i], path, at + ".peers[" + std::to_string(i) + "]", 0, schedules::kMaxRanks - 1));
  p.waiting_s = seconds(field(w, "waiting_s", path, at), path, at + ".waiting_s");
  return p;
}

/// The events of a rank state: [op index, start s, end s, failed], each within the run.
void read_events(const json& events, const std::string& path, RankState& st) {
  if (!events.is_array()) bad_value(path, "$.events", "must be an array");
  for (size_t i = 0; i < events.size(); ++i) {
    const json& e = events[i];
    const std::string at = "$.events[" + std::to_string(i) + "]";
    if (!e.is_array() || e.size() != 4) bad_value(path, at, "must be [op index, start s, end s, failed]");
    schedules::TraceEvent ev;
    ev.rank = st.rank;
    ev.op_index = index32(e[0], path, at + "[0]");
    ev.start_s = seconds(e[1], path, at + "[1]");
    ev.end_s = seconds(e[2], path, at + "[2]");
    if (ev.end_s < ev.start_s) bad_value(path, at, "ends before it starts");
    ev.failed = e[3].get<bool>();
    st.events.push_back(ev);
  }
}

} // namespace

std::string rank_state_path(const std::string& dir, int64_t rank) {
  return (fs::path(dir) / ("rank-" + std::to_string(rank) + ".json")).string();
}

namespace {
/// A state file's text: one JSON object and a newline.
std::string rank_state_text(const RankState& st) {
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
  return j.dump() + "\n";
}
} // namespace

void write_rank_state(const std::string& dir, const RankState& st) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  try {
    schedules::write_output_file(rank_state_path(dir, st.rank), rank_state_text(st));
  } catch (const schedules::OutputFileError& e) {
    throw RecordError(e.what());
  }
}

void write_rank_states(const std::string& dir, const std::vector<RankState>& states) {
  try {
    schedules::OutputFileBatch batch(dir, "output");
    for (const RankState& st : states)
      batch.add(fs::path(rank_state_path(dir, st.rank)).filename().string(), rank_state_text(st));
    batch.commit();
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
    st.rank = whole(field(j, "rank", path, "$"), path, "$.rank", 0, schedules::kMaxRanks - 1);
    st.pid = whole(field(j, "pid", path, "$"), path, "$.pid", 0, INT64_MAX);
    st.host = j.at("host").get<std::string>();
    st.status = parse_status(j.at("status").get<std::string>(), path);
    st.ops_completed = index32(field(j, "ops_completed", path, "$"), path, "$.ops_completed");
    st.ops_total = index32(field(j, "ops_total", path, "$"), path, "$.ops_total");
    st.elapsed_s = seconds(field(j, "elapsed_s", path, "$"), path, "$.elapsed_s");
    const json& issued = field(j, "issued", path, "$");
    if (!issued.is_object()) bad_value(path, "$.issued", "must be an object of channel: ops issued");
    for (const auto& [channel, n] : issued.items())
      st.issued[channel] = whole(n, path, "$.issued." + channel, 0, INT64_MAX);
    const json& waiting = field(j, "waiting", path, "$");
    if (!waiting.is_array()) bad_value(path, "$.waiting", "must be an array");
    for (size_t i = 0; i < waiting.size(); ++i)
      st.waiting.push_back(waiting_from_json(waiting[i], path, "$.waiting[" + std::to_string(i) + "]"));
    if (j.contains("init_phases"))
      for (const json& p : j.at("init_phases"))
        st.init_phases.push_back({p.at(0).get<std::string>(), seconds(p.at(1), path, "$.init_phases[][1]")});
    read_events(field(j, "events", path, "$"), path, st);
  } catch (const json::exception& e) {
    throw RecordError("rank state " + path + ": malformed: " + e.what());
  }
  return st;
}

} // namespace twinscale::records
