// Chrome trace-event JSON (docs/trace-format.md). Written event by event (a 12,288-rank
// trace does not fit a DOM), read back with nlohmann-json.
#include "schedules/trace.hpp"

#include <algorithm>
#include <array>
#include <cinttypes>
#include <cstdio>
#include <istream>
#include <numeric>
#include <ostream>

#include <nlohmann/json.hpp>

#include "schedules/error.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

namespace {
std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}
std::string quoted(std::string_view s) { return nlohmann::json(std::string(s)).dump(); }
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
      throw ScheduleError("trace event for rank " + std::to_string(e.rank) + " op " +
                          std::to_string(e.op_index) + " but its program has " +
                          std::to_string(p.ops.size()) + " ops");
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
    sep() << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << ranks[k] << ",\"tid\":0,\"args\":{\"name\":\"rank "
          << ranks[k] << "\"}}";
    sep() << "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":" << ranks[k]
          << ",\"tid\":0,\"args\":{\"sort_index\":" << ranks[k] << "}}";
    for (int s = 0; s < kStreamCount; ++s)
      if (streams[k][s])
        sep() << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << ranks[k] << ",\"tid\":" << s
              << ",\"args\":{\"name\":" << quoted(to_string(static_cast<Stream>(s))) << "}}";
  }
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
    if (op.is_communication())
      out << ",\"group\":" << quoted(to_string(op.group)) << ",\"peer\":" << op.peer;
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
  try {
    return it->get<T>();
  } catch (const nlohmann::json::exception&) {
    bad(path, where + "." + key, "has the wrong type (" + std::string(it->type_name()) + ")");
  }
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

std::vector<TraceRecord> read_chrome_trace(std::istream& in, const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw ScheduleError(path + ": not valid JSON (" + e.what() + ")");
  }
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    bad(path, "$", "expected an object with a \"traceEvents\" array");
  if (doc.contains("format_version") && doc["format_version"] != 1)
    bad(path, "$.format_version", "unsupported version " + doc["format_version"].dump() + " (this reader: 1)");
  std::vector<TraceRecord> out;
  const auto& events = doc["traceEvents"];
  for (size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    const std::string where = "$.traceEvents[" + std::to_string(i) + "]";
    if (!e.is_object()) bad(path, where, "expected an object");
    if (field<std::string>(e, "ph", path, where) != "X") continue;
    if (!e.contains("args") || !e["args"].is_object()) bad(path, where, "missing \"args\" object");
    const auto& a = e["args"];
    const std::string aw = where + ".args";
    TraceRecord r;
    r.rank = field<int64_t>(e, "pid", path, where);
    r.name = field<std::string>(e, "name", path, where);
    r.start_s = field<double>(e, "ts", path, where) * 1e-6;
    r.duration_s = field<double>(e, "dur", path, where) * 1e-6;
    const auto op = field<int64_t>(a, "op", path, aw);
    if (op < 0) bad(path, aw + ".op", "must be ≥ 0");
    r.op_index = static_cast<uint32_t>(op);
    r.kind = enum_field<OpKind>(a, "kind", op_kind_from_string, path, aw);
    r.stream = enum_field<Stream>(a, "stream", stream_from_string, path, aw);
    r.labels.iteration = field<int32_t>(a, "iteration", path, aw);
    r.labels.micro_batch = field<int32_t>(a, "micro_batch", path, aw);
    r.labels.chunk = field<int32_t>(a, "chunk", path, aw);
    r.labels.layer = field<int32_t>(a, "layer", path, aw);
    r.labels.phase = enum_field<Phase>(a, "phase", phase_from_string, path, aw);
    r.bytes = field<double>(a, "bytes", path, aw);
    r.failed = field<bool>(a, "failed", path, aw);
    out.push_back(std::move(r));
  }
  return out;
}

} // namespace twinscale::schedules
