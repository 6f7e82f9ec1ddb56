// Chrome trace-event JSON (docs/trace-format.md). Written event by event (a 12,288-rank
// trace does not fit a DOM), read back with nlohmann-json.
#include "schedules/trace.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <istream>
#include <iterator>
#include <limits>
#include <numeric>
#include <ostream>
#include <sstream>
#include <type_traits>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/limits.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

namespace {
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string quoted(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }

/// TraceRecord::instance of communication op `i` of `rank`'s program: the execution
/// rules' numbering (rule 2: instance k of a channel on the rank's group, named by the
/// group's first member; rule 3: the k-th message from a to b on their group).
std::string instance_of(const Schedule& schedule, const ProgramIndex& index, int64_t rank, uint32_t i) {
  const Op& op = schedule.program(rank).ops[i];
  const Channel& c = index.channels()[index.channel(i)];
  std::string out(to_string(op.group));
  if (op.is_collective()) {
    if (c.priority_class != 0) out += "/p" + std::to_string(c.priority_class);
    out += "@" + std::to_string(group_member(schedule.layout, op.group, rank, 0));
  } else {
    const int64_t peer = group_member(schedule.layout, op.group, rank, op.peer);
    const bool send = op.kind == OpKind::Send;
    out += ":" + std::to_string(send ? rank : peer) + ">" + std::to_string(send ? peer : rank);
  }
  return out + "#" + std::to_string(index.sequence(i));
}
} // namespace

void write_chrome_trace(const Trace& trace, const Schedule& schedule, std::ostream& out) {
  const int64_t world = schedule.world();
  std::vector<size_t> order(trace.events.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const auto& x = trace.events[a];
    const auto& y = trace.events[b];
    if (x.rank != y.rank) return x.rank < y.rank;
    if (x.start_s != y.start_s) return x.start_s < y.start_s;
    return x.op_index < y.op_index;
  });
  // which (rank, stream) pairs occur, for the metadata events
  std::vector<int64_t> ranks;
  std::vector<std::array<bool, kStreamCount>> streams;
  for (const auto& e : trace.events) {
    if (e.rank < 0 || e.rank >= world)
      throw ScheduleError("trace event for rank " + std::to_string(e.rank) + " but the schedule has " +
                          std::to_string(world) + " ranks");
    const Program& p = schedule.program(e.rank);
    if (e.op_index >= p.ops.size())
      throw ScheduleError("trace event for rank " + std::to_string(e.rank) + " op " + std::to_string(e.op_index) +
                          " but its program has " + std::to_string(p.ops.size()) + " ops");
  }
  for (size_t i : order) {
    const auto& e = trace.events[i];
    if (ranks.empty() || ranks.back() != e.rank) {
      ranks.push_back(e.rank);
      streams.emplace_back();
      streams.back().fill(false);
    }
    streams.back()[static_cast<int>(schedule.program(e.rank).ops[e.op_index].stream)] = true;
  }

  out << "{\"format\":\"twinscale-trace\",\"format_version\":1,\"source\":" << quoted(trace.source)
      << ",\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() -> std::ostream& {
    if (!first) out << ",\n";
    first = false;
    return out;
  };
  for (size_t k = 0; k < ranks.size(); ++k) {
    const auto r = static_cast<size_t>(ranks[k]);
    const std::string host = r < trace.hosts.size() ? trace.hosts[r] : std::string();
    const std::string name = "rank " + std::to_string(ranks[k]) + (host.empty() ? "" : " (" + host + ")");
    sep() << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << ranks[k]
          << ",\"tid\":0,\"args\":{\"name\":" << quoted(std::string_view(name))
          << (host.empty() ? "" : ",\"host\":" + quoted(std::string_view(host))) << "}}";
    sep() << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << ranks[k]
          << ",\"tid\":0,\"args\":{\"sort_index\":" << ranks[k] << "}}";
    for (int s = 0; s < kStreamCount; ++s)
      if (streams[k][s])
        sep() << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << ranks[k] << ",\"tid\":" << s
              << ",\"args\":{\"name\":" << quoted(to_string(static_cast<Stream>(s))) << "}}";
  }
  std::unordered_map<size_t, ProgramIndex> indices; // program id → its execution-rule index
  for (size_t i : order) {
    const auto& e = trace.events[i];
    const Op& op = schedule.program(e.rank).ops[e.op_index];
    const std::string& name = schedule.names.at(op.name);
    sep() << "{\"ph\":\"X\",\"name\":" << quoted(name) << ",\"cat\":" << quoted(to_string(op.kind))
          << ",\"pid\":" << e.rank << ",\"tid\":" << static_cast<int>(op.stream)
          << ",\"ts\":" << fixed(e.start_s * 1e6, 3) << ",\"dur\":" << fixed((e.end_s - e.start_s) * 1e6, 3)
          << ",\"args\":{\"op\":" << e.op_index << ",\"kind\":" << quoted(to_string(op.kind))
          << ",\"kernel\":" << quoted(to_string(op.kernel)) << ",\"stream\":" << quoted(to_string(op.stream))
          << ",\"iteration\":" << op.labels.iteration << ",\"micro_batch\":" << op.labels.micro_batch
          << ",\"chunk\":" << op.labels.chunk << ",\"layer\":" << op.labels.layer
          << ",\"phase\":" << quoted(to_string(op.labels.phase)) << ",\"bytes\":" << fixed(op.bytes, 0)
          << ",\"flops\":" << fixed(op.flops, 0);
    if (op.is_communication()) {
      const size_t id = schedule.program_of_rank[static_cast<size_t>(e.rank)];
      auto it = indices.find(id);
      if (it == indices.end()) it = indices.emplace(id, ProgramIndex(schedule.program(e.rank), id)).first;
      out << ",\"group\":" << quoted(to_string(op.group)) << ",\"peer\":" << op.peer
          << ",\"instance\":" << quoted(instance_of(schedule, it->second, e.rank, e.op_index));
    }
    out << ",\"failed\":" << (e.failed ? "true" : "false") << "}}";
  }
  out << "\n]}\n";
}

namespace {
[[noreturn]] void bad(const std::string& path, const std::string& where, const std::string& why) {
  throw ScheduleError(path + ": " + where + ": " + why);
}

template <class T>
T field(const nlohmann::json& obj, const char* key, const std::string& path, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) bad(path, where, std::string("missing \"") + key + "\"");
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // exact integers only: 1.5 is not truncated, 2^32 + k does not wrap to k
    if (!it->is_number_integer()) bad(path, where + "." + key, "expected an integer, got " + it->dump());
    if (it->is_number_unsigned() ? it->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<T>::max())
                                 : (it->get<int64_t>() < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
                                    it->get<int64_t>() > static_cast<int64_t>(std::numeric_limits<T>::max())))
      bad(path, where + "." + key, it->dump() + " is out of range");
    return static_cast<T>(it->get<int64_t>());
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!it->is_number()) bad(path, where + "." + key, "expected a number, got " + it->dump());
    const double v = it->get<double>();
    if (!std::isfinite(v)) bad(path, where + "." + key, "must be finite");
    return v;
  }
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(path, where + "." + key, "has the wrong type (" + std::string(it->type_name()) + ")");
  }
}

/// An op event ("ph": "X") holds the keys write_chrome_trace writes, no others.
void check_event_keys(const nlohmann::json& e, const std::string& path, const std::string& where) {
  try {
    check_json_keys(e, {"ph", "name", "cat", "pid", "tid", "ts", "dur", "args"}, path, where);
    check_json_keys(e["args"],
                    {"op", "kind", "kernel", "stream", "iteration", "micro_batch", "chunk", "layer", "phase", "bytes",
                     "flops", "group", "peer", "instance", "failed"},
                    path, where + ".args");
  } catch (const JsonDocumentError& err) {
    throw ScheduleError(err.what());
  }
}

/// The host a process_name metadata event names (args.host), into hosts[pid].
void read_host(const nlohmann::json& e, const std::string& path, const std::string& where,
               std::vector<std::string>& hosts) {
  const auto n = e.find("name"); // "ph" is a string here (checked by the caller)
  if (e["ph"] != "M" || n == e.end() || *n != "process_name") return;
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object() || !a->contains("host")) return; // a trace without hosts
  const auto rank = field<int64_t>(e, "pid", path, where);
  if (rank < 0 || rank >= kMaxRanks)
    bad(path, where + ".pid", "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(kMaxRanks - 1));
  const auto host = field<std::string>(*a, "host", path, where + ".args");
  if (host.empty()) bad(path, where + ".args.host", "an empty host name");
  if (hosts.size() <= static_cast<size_t>(rank)) hosts.resize(static_cast<size_t>(rank) + 1);
  hosts[static_cast<size_t>(rank)] = host;
}

template <class E>
E enum_field(const nlohmann::json& obj, const char* key, std::optional<E> (*parse)(std::string_view),
             const std::string& path, const std::string& where) {
  const auto text = field<std::string>(obj, key, path, where);
  const auto v = parse(text);
  if (!v) bad(path, where + "." + key, "unknown value \"" + text + "\"");
  return *v;
}
} // namespace

std::vector<TraceRecord> read_chrome_trace(std::istream& in, const std::string& path, std::vector<std::string>* hosts) {
  nlohmann::json doc;
  try {
    doc = parse_json_document(std::string(std::istreambuf_iterator<char>(in), {}), path);
    check_json_keys(doc, {"format", "format_version", "source", "displayTimeUnit", "traceEvents"}, path, "$");
  } catch (const JsonDocumentError& e) { // not JSON, a repeated key, too deep, an unknown key
    throw ScheduleError(e.what());
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    bad(path, "$", "expected an object with a \"traceEvents\" array");
  if (doc.contains("format_version") && doc["format_version"] != 1)
    bad(path, "$.format_version", "unsupported version " + doc["format_version"].dump() + " (this reader: 1)");
  std::vector<TraceRecord> out;
  std::unordered_map<uint64_t, size_t> seen; // (rank, op) → event index, for duplicates
  const auto& events = doc["traceEvents"];
  if (hosts) hosts->clear();
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const std::string where = "$.traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object()) bad(path, where, "expected an object");
    if (field<std::string>(e, "ph", path, where) != "X") {
      if (hosts) read_host(e, path, where, *hosts);
      continue;
    }
    if (!e.contains("args") || !e["args"].is_object()) bad(path, where, "missing \"args\" object");
    const auto& a = e["args"];
    const std::string aw = where + ".args";
    check_event_keys(e, path, where);
    TraceRecord r;
    r.rank = field<int64_t>(e, "pid", path, where);
    if (r.rank < 0 || r.rank >= kMaxRanks)
      bad(path, where + ".pid", "rank " + std::to_string(r.rank) + " is outside 0.." + std::to_string(kMaxRanks - 1));
    r.name = field<std::string>(e, "name", path, where);
    const double ts = field<double>(e, "ts", path, where);
    const double dur = field<double>(e, "dur", path, where);
    if (ts < 0) bad(path, where + ".ts", "start " + std::to_string(ts) + " µs is negative");
    if (dur < 0) bad(path, where + ".dur", "duration " + std::to_string(dur) + " µs is negative");
    r.start_s = ts * 1e-6;
    r.duration_s = dur * 1e-6;
    const auto op = field<int64_t>(a, "op", path, aw);
    if (op < 0 || op >= kMaxOpsPerProgram)
      bad(path, aw + ".op", std::to_string(op) + " is not an op index (0 to 2^31 − 1)");
    r.op_index = static_cast<uint32_t>(op);
    const uint64_t key = static_cast<uint64_t>(r.rank) << 32 | r.op_index;
    if (const auto [it, fresh] = seen.emplace(key, i); !fresh)
      bad(path, where,
          "duplicate event: rank " + std::to_string(r.rank) + " op " + std::to_string(op) +
              " was already traced by $.traceEvents[" + std::to_string(it->second) + "]");
    r.kind = enum_field<OpKind>(a, "kind", op_kind_from_string, path, aw);
    r.stream = enum_field<Stream>(a, "stream", stream_from_string, path, aw);
    r.labels.iteration = field<int32_t>(a, "iteration", path, aw);
    r.labels.micro_batch = field<int32_t>(a, "micro_batch", path, aw);
    r.labels.chunk = field<int32_t>(a, "chunk", path, aw);
    r.labels.layer = field<int32_t>(a, "layer", path, aw);
    r.labels.phase = enum_field<Phase>(a, "phase", phase_from_string, path, aw);
    r.bytes = field<double>(a, "bytes", path, aw);
    if (r.bytes < 0) bad(path, aw + ".bytes", "must be ≥ 0");
    r.failed = field<bool>(a, "failed", path, aw);
    if (a.contains("instance")) r.instance = field<std::string>(a, "instance", path, aw); // absent before it existed
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<TraceRecord> read_chrome_trace_file(const std::string& path, std::vector<std::string>* hosts) {
  std::string text;
  try {
    text = read_input_file(path, "trace", InputKind::Json);
  } catch (const InputFileError& e) {
    throw ScheduleError(e.what());
  }
  std::istringstream in(std::move(text));
  return read_chrome_trace(in, path, hosts);
}

} // namespace twinscale::schedules
