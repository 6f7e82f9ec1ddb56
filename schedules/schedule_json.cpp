#include "schedules/schedule_json.hpp"

#include <algorithm>
#include <cmath>
#include <istream>
#include <limits>
#include <ostream>
#include <sstream>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "schedules/check_job.hpp"
#include "schedules/detail/key_json.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/job_keys.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {

namespace {
using nlohmann::json;

// The job object: every key its table (job_keys.cpp) says to write.
json job_json(const JobSpec& j) { return detail::keys_to_json(j, job_keys()); }

json op_json(const Op& op, const Program& p) {
  json deps = json::array();
  for (uint32_t d : p.deps_of(op)) deps.push_back(d);
  return json{{"kind", to_string(op.kind)},
              {"kernel", to_string(op.kernel)},
              {"stream", to_string(op.stream)},
              {"dtype", to_string(op.dtype)},
              {"group", to_string(op.group)},
              {"priority", op.priority},
              {"peer", op.peer},
              {"flops", op.flops},
              {"bytes", op.bytes},
              {"shape", op.shape},
              {"iteration", op.labels.iteration},
              {"micro_batch", op.labels.micro_batch},
              {"chunk", op.labels.chunk},
              {"layer", op.labels.layer},
              {"phase", to_string(op.labels.phase)},
              {"name", op.name},
              {"deps", deps}};
}

// ---- reading ----
/// A JSON parser callback that refuses an object stating a key twice (the parser would
/// keep the last silently): ScheduleError naming the file, where and the key.
class DuplicateKeys {
public:
  explicit DuplicateKeys(std::string path) : path_(std::move(path)) {}

  bool operator()(json::parse_event_t event, const json& parsed) {
    switch (event) {
    case json::parse_event_t::object_start: frames_.push_back({false, {}, 0}); break;
    case json::parse_event_t::array_start: frames_.push_back({true, {}, 0}); break;
    case json::parse_event_t::key: {
      const auto& key = parsed.get_ref<const std::string&>();
      std::vector<std::string>& keys = frames_.back().keys;
      if (std::find(keys.begin(), keys.end(), key) != keys.end())
        throw ScheduleError(path_ + ": " + where() + "." + key + ": duplicate key \"" + key +
                            "\" (an object states each key once)");
      keys.push_back(key);
      break;
    }
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      frames_.pop_back();
      element_done();
      break;
    case json::parse_event_t::value: element_done(); break;
    }
    return true;
  }

private:
  struct Frame {
    bool array;
    std::vector<std::string> keys; // an object's keys so far
    size_t index;                  // an array's elements so far
  };
  void element_done() {
    if (!frames_.empty() && frames_.back().array) ++frames_.back().index;
  }
  /// The JSON path of the innermost open object.
  std::string where() const {
    std::string out = "$";
    for (size_t i = 0; i + 1 < frames_.size(); ++i)
      out += frames_[i].array ? "[" + std::to_string(frames_[i].index) + "]" : "." + frames_[i].keys.back();
    return out;
  }
  std::string path_;
  std::vector<Frame> frames_;
};

class Reader {
public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& why) const {
    throw ScheduleError(path_ + ": " + where + ": " + why);
  }

  const json& at(const json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) fail(where, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }

  template <class T>
  T get(const json& obj, const char* key, const std::string& where) const {
    const json& v = at(obj, key, where);
    const std::string here = where + "." + key;
    if constexpr (std::is_same_v<T, bool>) {
      if (!v.is_boolean()) fail(here, "expected true or false, got " + std::string(v.type_name()));
    } else if constexpr (std::is_integral_v<T>) {
      if (!v.is_number_integer()) fail(here, "expected an integer, got " + std::string(v.type_name()));
      const auto x = v.get<int64_t>();
      if (x < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (x > 0 && static_cast<uint64_t>(x) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        fail(here, "integer " + std::to_string(x) + " out of range");
      return static_cast<T>(x);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (!v.is_number()) fail(here, "expected a number, got " + std::string(v.type_name()));
      const double x = v.get<double>();
      if (!std::isfinite(x) || x < 0) fail(here, "expected a finite number ≥ 0, got " + v.dump());
    } else {
      if (!v.is_string()) fail(here, "expected a string, got " + std::string(v.type_name()));
    }
    return v.get<T>();
  }

  template <class E>
  E get_enum(const json& obj, const char* key, const std::string& where,
             std::optional<E> (*parse)(std::string_view)) const {
    const auto text = get<std::string>(obj, key, where);
    const auto v = parse(text);
    if (!v) fail(where + "." + key, "unknown value \"" + text + "\"");
    return *v;
  }

  JobSpec job(const json& j, const std::string& w) const {
    JobSpec out;
    detail::keys_from_json(j, w, job_sections(), job_keys(), out,
                           [this](const std::string& where, const std::string& why) { fail(where, why); });
    out.model.name = out.name;
    return out;
  }

  /// Fails naming the first member of the object `obj` that is not in `known`.
  void only_keys(const json& obj, const std::string& where, const std::vector<std::string>& known) const {
    for (const auto& [k, v] : obj.items())
      if (std::find(known.begin(), known.end(), k) == known.end())
        detail::refuse_unknown_keys(obj, where, known,
                                    [this](const std::string& at, const std::string& why) { fail(at, why); });
  }

  Op op(const json& j, const std::string& w, Program& prog, size_t index, size_t names) const {
    Op o;
    o.kind = get_enum<OpKind>(j, "kind", w, op_kind_from_string);
    o.kernel = get_enum<Kernel>(j, "kernel", w, kernel_from_string);
    o.stream = get_enum<Stream>(j, "stream", w, stream_from_string);
    o.dtype = get_enum<DType>(j, "dtype", w, dtype_from_string);
    o.group = get_enum<GroupKind>(j, "group", w, group_kind_from_string);
    o.priority = get<int32_t>(j, "priority", w);
    o.peer = get<int32_t>(j, "peer", w);
    o.flops = get<double>(j, "flops", w);
    o.bytes = get<double>(j, "bytes", w);
    const json& shape = at(j, "shape", w);
    if (!shape.is_array() || shape.size() != 4) fail(w + ".shape", "expected an array of 4 integers");
    const bool matrix = o.kind == OpKind::Gemm || o.kind == OpKind::Attention;
    for (size_t i = 0; i < 4; ++i) {
      if (!shape[i].is_number_integer() || shape[i].get<int64_t>() < 0 ||
          shape[i].get<int64_t>() > max_shape_dim(matrix))
        fail(w + ".shape[" + std::to_string(i) + "]",
             matrix ? "expected an integer in [0, 2^31] (the largest GEMM or attention dimension an executor takes)"
                    : "expected an integer in [0, 2^40] (the longest vector a kernel of this kind takes)");
      o.shape[i] = shape[i].get<int64_t>();
    }
    o.labels.iteration = get<int32_t>(j, "iteration", w);
    o.labels.micro_batch = get<int32_t>(j, "micro_batch", w);
    o.labels.chunk = get<int32_t>(j, "chunk", w);
    o.labels.layer = get<int32_t>(j, "layer", w);
    o.labels.phase = get_enum<Phase>(j, "phase", w, phase_from_string);
    o.name = get<uint32_t>(j, "name", w);
    if (o.name >= names)
      fail(w + ".name", "index " + std::to_string(o.name) + " but there are " + std::to_string(names) + " names");
    const json& deps = at(j, "deps", w);
    if (!deps.is_array()) fail(w + ".deps", "expected an array");
    o.dep_begin = static_cast<uint32_t>(prog.deps.size());
    o.dep_count = static_cast<uint32_t>(deps.size());
    for (size_t i = 0; i < deps.size(); ++i) {
      const std::string dw = w + ".deps[" + std::to_string(i) + "]";
      if (!deps[i].is_number_unsigned()) fail(dw, "expected an op index");
      const auto d = deps[i].get<uint64_t>();
      if (d >= index)
        fail(dw, "op " + std::to_string(d) + " is not an earlier op (this is op " + std::to_string(index) + ")");
      prog.deps.push_back(static_cast<uint32_t>(d));
    }
    static const std::vector<std::string> kOpKeys = {"kind",  "kernel", "stream", "dtype", "group",     "priority",
                                                     "peer",  "flops",  "bytes",  "shape", "iteration", "micro_batch",
                                                     "chunk", "layer",  "phase",  "name",  "deps"};
    only_keys(j, w, kOpKeys);
    return o;
  }

private:
  std::string path_;
};
} // namespace

std::string job_to_json(const JobSpec& job) { return job_json(job).dump(); }

void write_schedule_json(const Schedule& s, std::ostream& out) {
  json mem = json::array();
  for (const auto& m : s.memory_by_stage)
    mem.push_back({{"parameters_bytes", m.parameters_bytes},
                   {"gradients_bytes", m.gradients_bytes},
                   {"optimizer_bytes", m.optimizer_bytes},
                   {"activations_bytes", m.activations_bytes}});
  out << "{\"format\":\"twinscale-schedule\",\"format_version\":" << kScheduleFormatVersion
      << ",\n\"job\":" << job_json(s.job).dump()
      << ",\n\"layout\":" << json{{"tp", s.layout.tp}, {"dp", s.layout.dp}, {"pp", s.layout.pp}}.dump()
      << ",\n\"model_flops_per_iteration\":" << json(s.model_flops_per_iteration).dump()
      << ",\n\"memory_by_stage\":" << mem.dump() << ",\n\"names\":" << json(s.names).dump()
      << ",\n\"program_of_rank\":" << json(s.program_of_rank).dump() << ",\n\"programs\":[";
  for (size_t p = 0; p < s.programs.size(); ++p) {
    out << (p ? ",\n" : "\n") << "{\"ops\":[";
    const Program& prog = s.programs[p];
    for (size_t i = 0; i < prog.ops.size(); ++i) out << (i ? ",\n" : "\n") << op_json(prog.ops[i], prog).dump();
    out << "\n]}";
  }
  out << "\n]}\n";
}

namespace {
/// The JSON document of `in`; ScheduleError for bad syntax or a key stated twice.
json parse_document(std::istream& in, const std::string& path) {
  try {
    DuplicateKeys duplicates(path);
    return json::parse(
        in, [&duplicates](int, json::parse_event_t event, json& parsed) { return duplicates(event, parsed); });
  } catch (const json::exception& e) { // parse_error, and out_of_range for 1e400
    throw ScheduleError(path + ": not valid JSON (" + e.what() + ")");
  }
}
} // namespace

Schedule read_schedule_json(std::istream& in, const std::string& path) {
  const json doc = parse_document(in, path);
  Reader r(path);
  if (!doc.is_object()) r.fail("$", "expected an object");
  r.only_keys(doc, "$",
              {"format", "format_version", "job", "layout", "model_flops_per_iteration", "memory_by_stage", "names",
               "program_of_rank", "programs"});
  if (r.get<std::string>(doc, "format", "$") != "twinscale-schedule")
    r.fail("$.format", "expected \"twinscale-schedule\"");
  const int version = r.get<int>(doc, "format_version", "$");
  if (version != kScheduleFormatVersion)
    r.fail("$.format_version", "unsupported version " + std::to_string(version) +
                                   " (this reader: " + std::to_string(kScheduleFormatVersion) + ")");
  Schedule s;
  s.version = version;
  s.job = r.job(r.at(doc, "job", "$"), "$.job");
  const json& L = r.at(doc, "layout", "$");
  s.layout.tp = r.get<int64_t>(L, "tp", "$.layout");
  s.layout.dp = r.get<int64_t>(L, "dp", "$.layout");
  s.layout.pp = r.get<int64_t>(L, "pp", "$.layout");
  r.only_keys(L, "$.layout", {"tp", "dp", "pp"});
  try {
    check_layout_sizes(s.layout.tp, s.layout.dp, s.layout.pp, "layout");
  } catch (const JobError& e) {
    r.fail("$.layout", e.what());
  }
  // the embedded job must be a valid job, and the one this layout was lowered from
  try {
    check_job(s.job);
  } catch (const JobError& e) {
    r.fail("$.job", e.what());
  }
  const auto& par = s.job.parallel;
  s.layout.ep = par.ep; // the expert-parallel blocks follow from the job
  s.layout.cp = par.cp; // and the context-parallel ones (layout.dp counts dp·cp)
  s.layout.ep_node = par.ep_domain();
  s.layout.etp = par.etp;
  if (par.tp != s.layout.tp || par.dp_cp() != s.layout.dp || par.pp != s.layout.pp)
    r.fail("$.layout", "tp " + std::to_string(s.layout.tp) + ", dp " + std::to_string(s.layout.dp) + ", pp " +
                           std::to_string(s.layout.pp) + " disagrees with $.job.parallel (tp " +
                           std::to_string(par.tp) + ", dp·cp " + std::to_string(par.dp_cp()) + ", pp " +
                           std::to_string(par.pp) + ")");
  s.model_flops_per_iteration = r.get<double>(doc, "model_flops_per_iteration", "$");
  const json& mem = r.at(doc, "memory_by_stage", "$");
  if (!mem.is_array()) r.fail("$.memory_by_stage", "expected an array");
  if (static_cast<int64_t>(mem.size()) != s.layout.pp)
    r.fail("$.memory_by_stage", "has " + std::to_string(mem.size()) +
                                    " entries; expected one per pipeline stage (pp = " + std::to_string(s.layout.pp) +
                                    ")");
  for (size_t i = 0; i < mem.size(); ++i) {
    const std::string w = "$.memory_by_stage[" + std::to_string(i) + "]";
    MemoryEstimate m;
    m.parameters_bytes = r.get<double>(mem[i], "parameters_bytes", w);
    m.gradients_bytes = r.get<double>(mem[i], "gradients_bytes", w);
    m.optimizer_bytes = r.get<double>(mem[i], "optimizer_bytes", w);
    m.activations_bytes = r.get<double>(mem[i], "activations_bytes", w);
    r.only_keys(mem[i], w, {"parameters_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes"});
    s.memory_by_stage.push_back(m);
  }
  const json& names = r.at(doc, "names", "$");
  if (!names.is_array()) r.fail("$.names", "expected an array of strings");
  for (size_t i = 0; i < names.size(); ++i) {
    if (!names[i].is_string()) r.fail("$.names[" + std::to_string(i) + "]", "expected a string");
    s.names.push_back(names[i].get<std::string>());
  }
  const json& programs = r.at(doc, "programs", "$");
  if (!programs.is_array()) r.fail("$.programs", "expected an array");
  for (size_t p = 0; p < programs.size(); ++p) {
    const std::string pw = "$.programs[" + std::to_string(p) + "]";
    const json& ops = r.at(programs[p], "ops", pw);
    if (!ops.is_array()) r.fail(pw + ".ops", "expected an array");
    r.only_keys(programs[p], pw, {"ops"});
    if (static_cast<int64_t>(ops.size()) > kMaxOpsPerProgram)
      r.fail(pw + ".ops", "more than 2^31 ops (op indices are 32-bit)");
    Program prog;
    prog.ops.reserve(ops.size());
    for (size_t i = 0; i < ops.size(); ++i)
      prog.ops.push_back(r.op(ops[i], pw + ".ops[" + std::to_string(i) + "]", prog, i, s.names.size()));
    s.programs.push_back(std::move(prog));
  }
  const json& por = r.at(doc, "program_of_rank", "$");
  if (!por.is_array() || static_cast<int64_t>(por.size()) != s.layout.world())
    r.fail("$.program_of_rank", "expected an array of " + std::to_string(s.layout.world()) +
                                    " program indices (one per rank of the layout)");
  for (size_t i = 0; i < por.size(); ++i) {
    const std::string w = "$.program_of_rank[" + std::to_string(i) + "]";
    if (!por[i].is_number_unsigned() || por[i].get<uint64_t>() >= s.programs.size())
      r.fail(w, "expected a program index below " + std::to_string(s.programs.size()));
    s.program_of_rank.push_back(por[i].get<uint32_t>());
  }
  std::vector<bool> used(s.programs.size(), false);
  for (uint32_t p : s.program_of_rank) used[p] = true;
  for (size_t p = 0; p < s.programs.size(); ++p)
    if (!used[p])
      r.fail("$.programs[" + std::to_string(p) + "]", "is the program of no rank (program_of_rank never names it)");
  return s;
}

Schedule read_schedule_file(const std::string& path) {
  std::string text;
  try {
    text = read_input_file(path, "schedule", InputKind::Json);
  } catch (const InputFileError& e) {
    throw ScheduleError(e.what());
  }
  std::istringstream in(std::move(text));
  return read_schedule_json(in, path);
}

} // namespace twinscale::schedules
