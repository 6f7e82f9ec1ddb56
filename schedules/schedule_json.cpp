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
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {

namespace {
using nlohmann::json;

json job_fields_json(const JobSpec& j) {
  const auto& m = j.model;
  const auto& p = j.parallel;
  const auto& o = j.options;
  return json{
      {"name", j.name},
      {"cluster", j.cluster},
      {"model",
       {{"layers", m.layers},
        {"hidden", m.hidden},
        {"heads", m.heads},
        {"seq_len", m.seq_len},
        {"vocab", m.vocab},
        {"ffn_hidden", m.ffn_hidden},
        {"block", enum_name(kBlockKindNames, m.block)},
        {"attention", enum_name(kAttentionKindNames, m.attention)},
        {"window", m.window},
        {"kv_heads", m.kv_heads},
        {"mlp", enum_name(kMlpKindNames, m.mlp)},
        {"untied_embeddings", m.untied_embeddings},
        {"norm", enum_name(kNormKindNames, m.norm)},
        {"experts", m.experts},
        {"top_k", m.top_k},
        {"moe_ffn_hidden", m.moe_ffn_hidden},
        {"capacity_factor", m.capacity_factor},
        {"shared_experts", m.shared_experts},
        {"moe_every", m.moe_every},
        {"first_dense_layers", m.first_dense_layers},
        {"routing", enum_name(kRoutingKindNames, m.routing)},
        {"routing_alpha", m.routing_alpha},
        {"routing_exponent", m.routing_exponent},
        {"routing_seed", m.routing_seed}}},
      {"parallel",
       {{"tp", p.tp},
        {"pp", p.pp},
        {"vpp", p.vpp},
        {"dp", p.dp},
        {"ep", p.ep},
        {"first_stage_layers", p.first_stage_layers},
        {"last_stage_layers", p.last_stage_layers},
        {"sequence_parallel", p.sequence_parallel},
        {"pp_scatter_gather", p.pp_scatter_gather},
        {"zero_stage", p.zero_stage},
        {"micro_batch", p.micro_batch},
        {"global_batch", p.global_batch}}},
      {"schedule",
       {{"pipeline", enum_name(kPipelineKindNames, o.pipeline)},
        {"iterations", o.iterations},
        {"optimizer", enum_name(kOptimizerKindNames, o.optimizer)},
        {"recompute", o.recompute},
        {"selective_recompute", o.selective_recompute},
        {"grad_reduce_dtype", o.grad_reduce_fp32 ? "fp32" : "bf16"},
        {"async_data_loading", o.async_data_loading},
        {"grad_accumulation_fusion", o.grad_accumulation_fusion},
        {"tp_async_allreduce", o.tp_async_allreduce},
        {"fsdp_prefetch", o.fsdp_prefetch},
        {"overlap",
         {{"dp", o.overlap.dp}, {"pp", o.overlap.pp}, {"tp", o.overlap.tp}, {"tp_chunks", o.overlap.tp_chunks}}},
        {"operators",
         {{"flash_attention", o.operators.flash_attention},
          {"fused_layernorm", o.operators.fused_layernorm},
          {"fused_gelu", o.operators.fused_gelu}}}}}};
}

json job_json(const JobSpec& j) {
  json out = job_fields_json(j);
  // written only when used, so that files of jobs without them are unchanged
  if (j.parallel.cp > 1) out["parallel"]["cp"] = j.parallel.cp;
  if (j.parallel.etp > 0) out["parallel"]["etp"] = j.parallel.etp; // folded experts only
  if (j.parallel.ep_a2a == EpAllToAll::Hierarchical) {
    out["parallel"]["ep_a2a"] = enum_name(kEpAllToAllNames, j.parallel.ep_a2a);
    out["parallel"]["ep_node"] = j.parallel.ep_node;
    if (j.parallel.max_nodes_per_token > 0) out["parallel"]["max_nodes_per_token"] = j.parallel.max_nodes_per_token;
  }
  if (j.model.rotary) out["model"]["rotary"] = true;
  // written only when not the default, so that files of earlier jobs are unchanged
  if (j.model.dropout != ModelSpec{}.dropout) out["model"]["dropout"] = j.model.dropout;
  if (!j.options.operators.fused_rope) out["schedule"]["operators"]["fused_rope"] = false;
  if (!j.options.operators.fused_qkv) out["schedule"]["operators"]["fused_qkv"] = false;
  if (j.options.fsdp_copy_out) out["schedule"]["fsdp_copy_out"] = true;
  if (j.options.host_seconds_per_module > 0)
    out["schedule"]["host_seconds_per_module"] = j.options.host_seconds_per_module;
  if (j.options.host_seconds_per_fp8_module > 0)
    out["schedule"]["host_seconds_per_fp8_module"] = j.options.host_seconds_per_fp8_module;
  // written only when used, so that files of jobs without them are unchanged
  if (!j.software.empty()) out["software"] = j.software;
  if (j.options.dp_bucket_params > 0) out["schedule"]["dp_bucket_params"] = j.options.dp_bucket_params;
  if (j.options.recompute_every > 1) out["schedule"]["recompute_every"] = j.options.recompute_every;
  if (j.options.recompute_saves_alternate_matmuls) out["schedule"]["recompute_saves_alternate_matmuls"] = true;
  if (j.options.fp8()) // written only when not the default, so BF16 schedules are unchanged
    out["schedule"]["precision"] = {
        {"gemm", enum_name(kGemmPrecisionNames, j.options.gemm_precision)},
        {"fp8_amax_reduction", enum_name(kFp8AmaxReductionNames, j.options.fp8_amax_reduction)}};
  return out;
}

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

  template <class E, size_t N>
  E get_choice(const json& obj, const char* key, const std::string& where, const EnumNames<E, N>& names) const {
    const auto text = get<std::string>(obj, key, where);
    if (const auto value = enum_from_name(names, text)) return *value;
    fail(where + "." + key, "unknown value \"" + text + "\"; valid: " + enum_names_list(names));
  }
  template <class E>
  E get_choice(const json& obj, const char* key, const std::string& where,
               std::initializer_list<std::pair<std::string_view, E>> choices) const {
    const auto text = get<std::string>(obj, key, where);
    std::string valid;
    for (auto& [n, v] : choices) {
      if (n == text) return v;
      valid += (valid.empty() ? "" : ", ") + std::string(n);
    }
    fail(where + "." + key, "unknown value \"" + text + "\"; valid: " + valid);
  }

  JobSpec job(const json& j, const std::string& w) const {
    JobSpec out;
    out.name = get<std::string>(j, "name", w);
    out.cluster = get<std::string>(j, "cluster", w);
    const json& m = at(j, "model", w);
    const std::string mw = w + ".model";
    out.model.name = out.name;
    out.model.layers = get<int64_t>(m, "layers", mw);
    out.model.hidden = get<int64_t>(m, "hidden", mw);
    out.model.heads = get<int64_t>(m, "heads", mw);
    out.model.seq_len = get<int64_t>(m, "seq_len", mw);
    out.model.vocab = get<int64_t>(m, "vocab", mw);
    out.model.ffn_hidden = get<int64_t>(m, "ffn_hidden", mw);
    out.model.block = get_choice(m, "block", mw, kBlockKindNames);
    out.model.attention = get_choice(m, "attention", mw, kAttentionKindNames);
    out.model.window = get<int64_t>(m, "window", mw);
    // Added later; absent in older files means the defaults.
    if (m.contains("kv_heads")) out.model.kv_heads = get<int64_t>(m, "kv_heads", mw);
    if (m.contains("mlp")) out.model.mlp = get_choice(m, "mlp", mw, kMlpKindNames);
    if (m.contains("untied_embeddings")) out.model.untied_embeddings = get<bool>(m, "untied_embeddings", mw);
    if (m.contains("rotary")) out.model.rotary = get<bool>(m, "rotary", mw);
    if (m.contains("dropout")) out.model.dropout = get<double>(m, "dropout", mw);
    // Added later; absent in older files means the defaults (dense, LayerNorm).
    auto& md = out.model;
    if (m.contains("norm")) md.norm = get_choice(m, "norm", mw, kNormKindNames);
    if (m.contains("experts")) md.experts = get<int64_t>(m, "experts", mw);
    if (m.contains("top_k")) md.top_k = get<int64_t>(m, "top_k", mw);
    if (m.contains("moe_ffn_hidden")) md.moe_ffn_hidden = get<int64_t>(m, "moe_ffn_hidden", mw);
    if (m.contains("capacity_factor")) md.capacity_factor = get<double>(m, "capacity_factor", mw);
    if (m.contains("shared_experts")) md.shared_experts = get<int64_t>(m, "shared_experts", mw);
    if (m.contains("moe_every")) md.moe_every = get<int64_t>(m, "moe_every", mw);
    if (m.contains("first_dense_layers")) md.first_dense_layers = get<int64_t>(m, "first_dense_layers", mw);
    if (m.contains("routing")) md.routing = get_choice(m, "routing", mw, kRoutingKindNames);
    if (m.contains("routing_alpha")) md.routing_alpha = get<double>(m, "routing_alpha", mw);
    if (m.contains("routing_exponent")) md.routing_exponent = get<double>(m, "routing_exponent", mw);
    if (m.contains("routing_seed")) md.routing_seed = get<int64_t>(m, "routing_seed", mw);
    const json& p = at(j, "parallel", w);
    const std::string pw = w + ".parallel";
    auto& par = out.parallel;
    par.tp = get<int64_t>(p, "tp", pw);
    par.pp = get<int64_t>(p, "pp", pw);
    par.vpp = get<int64_t>(p, "vpp", pw);
    par.dp = get<int64_t>(p, "dp", pw);
    if (p.contains("ep")) par.ep = get<int64_t>(p, "ep", pw);
    if (p.contains("cp")) par.cp = get<int64_t>(p, "cp", pw);
    if (p.contains("ep_a2a")) // absent means the flat all-to-all
      par.ep_a2a = get_choice(p, "ep_a2a", pw, kEpAllToAllNames);
    if (p.contains("ep_node")) par.ep_node = get<int64_t>(p, "ep_node", pw);
    if (p.contains("etp")) par.etp = get<int64_t>(p, "etp", pw); // absent: unfolded experts
    if (p.contains("max_nodes_per_token")) par.max_nodes_per_token = get<int64_t>(p, "max_nodes_per_token", pw);
    if (p.contains("first_stage_layers")) par.first_stage_layers = get<int64_t>(p, "first_stage_layers", pw);
    if (p.contains("last_stage_layers")) par.last_stage_layers = get<int64_t>(p, "last_stage_layers", pw);
    par.sequence_parallel = get<bool>(p, "sequence_parallel", pw);
    // Added later; absent in older files means off.
    par.pp_scatter_gather = p.contains("pp_scatter_gather") && get<bool>(p, "pp_scatter_gather", pw);
    par.zero_stage = get<int64_t>(p, "zero_stage", pw);
    par.micro_batch = get<int64_t>(p, "micro_batch", pw);
    par.global_batch = get<int64_t>(p, "global_batch", pw);
    const json& s = at(j, "schedule", w);
    const std::string sw = w + ".schedule";
    auto& o = out.options;
    o.pipeline = get_choice(s, "pipeline", sw, kPipelineKindNames);
    o.iterations = get<int64_t>(s, "iterations", sw);
    o.optimizer = get_choice(s, "optimizer", sw, kOptimizerKindNames);
    o.recompute = get<bool>(s, "recompute", sw);
    // Added later; absent in older files means off.
    o.selective_recompute = s.contains("selective_recompute") && get<bool>(s, "selective_recompute", sw);
    o.grad_reduce_fp32 = s.contains("grad_reduce_dtype") &&
                         get_choice<bool>(s, "grad_reduce_dtype", sw, {{"bf16", false}, {"fp32", true}});
    o.async_data_loading = get<bool>(s, "async_data_loading", sw);
    // Added later; absent in older files means on (the default).
    o.grad_accumulation_fusion =
        !s.contains("grad_accumulation_fusion") || get<bool>(s, "grad_accumulation_fusion", sw);
    o.tp_async_allreduce = !s.contains("tp_async_allreduce") || get<bool>(s, "tp_async_allreduce", sw);
    if (s.contains("fsdp_prefetch")) o.fsdp_prefetch = get<int64_t>(s, "fsdp_prefetch", sw);
    if (s.contains("dp_bucket_params")) o.dp_bucket_params = get<int64_t>(s, "dp_bucket_params", sw);
    if (s.contains("recompute_every")) o.recompute_every = get<int64_t>(s, "recompute_every", sw);
    o.recompute_saves_alternate_matmuls =
        s.contains("recompute_saves_alternate_matmuls") && get<bool>(s, "recompute_saves_alternate_matmuls", sw);
    if (j.contains("software")) out.software = get<std::string>(j, "software", w);
    const json& ov = at(s, "overlap", sw);
    o.overlap.dp = get<bool>(ov, "dp", sw + ".overlap");
    o.overlap.pp = get<bool>(ov, "pp", sw + ".overlap");
    o.overlap.tp = get<bool>(ov, "tp", sw + ".overlap");
    o.overlap.tp_chunks = get<int64_t>(ov, "tp_chunks", sw + ".overlap");
    const json& op = at(s, "operators", sw);
    o.operators.flash_attention = get<bool>(op, "flash_attention", sw + ".operators");
    o.operators.fused_layernorm = get<bool>(op, "fused_layernorm", sw + ".operators");
    o.operators.fused_gelu = get<bool>(op, "fused_gelu", sw + ".operators");
    if (op.contains("fused_rope")) o.operators.fused_rope = get<bool>(op, "fused_rope", sw + ".operators");
    if (op.contains("fused_qkv")) o.operators.fused_qkv = get<bool>(op, "fused_qkv", sw + ".operators");
    if (s.contains("fsdp_copy_out")) o.fsdp_copy_out = get<bool>(s, "fsdp_copy_out", sw);
    if (s.contains("host_seconds_per_module"))
      o.host_seconds_per_module = get<double>(s, "host_seconds_per_module", sw);
    if (s.contains("host_seconds_per_fp8_module"))
      o.host_seconds_per_fp8_module = get<double>(s, "host_seconds_per_fp8_module", sw);
    if (s.contains("precision")) { // absent means BF16 GEMMs
      const json& pr = at(s, "precision", sw);
      o.gemm_precision = get_choice(pr, "gemm", sw + ".precision", kGemmPrecisionNames);
      o.fp8_amax_reduction = get_choice(pr, "fp8_amax_reduction", sw + ".precision", kFp8AmaxReductionNames);
    }
    return out;
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

Schedule read_schedule_json(std::istream& in, const std::string& path) {
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) { // parse_error, and out_of_range for 1e400
    throw ScheduleError(path + ": not valid JSON (" + e.what() + ")");
  }
  Reader r(path);
  if (!doc.is_object()) r.fail("$", "expected an object");
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
