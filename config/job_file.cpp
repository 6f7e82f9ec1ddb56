// Job file format (TOML). Every key, its type, default and meaning:
//
//   name    = "gpt-175b"            string, required: the job's name (labels results)
//   cluster = "megascale-ampere"    string, required: cluster preset name or cluster file
//   software = "megatron-core-0.8"  string, optional: the software stack that runs the job, a
//                                   preset of presets/software/ or a file in the job's folder;
//                                   its facts ([schedule], [schedule.overlap],
//                                   [schedule.operators], [precision] keys it states) are the
//                                   defaults the job's own keys override
//   gpus    = 12288                 integer ≥ 1, optional: total GPUs; when parallel.dp is
//                                   omitted, dp = gpus / (tp·cp·pp) (must divide exactly);
//                                   when both are given they must agree
//
//   [model]                         required
//   layers     = 96                 integer ≥ 1: transformer layers
//   hidden     = 12288              integer ≥ 1: hidden size h
//   heads      = 128                integer ≥ 1: attention heads (h % heads == 0)
//   seq_len    = 2048               integer ≥ 1: sequence length s in tokens
//   vocab      = 64000              integer ≥ 1: vocabulary size V
//   ffn_hidden = 0                  integer ≥ 0: MLP inner size; 0 (default) means 4·hidden
//   block      = "serial"           "serial" | "parallel" (M1: y = x + MLP(LN x) + Attn(LN x))
//   attention  = "dense"            "dense" | "sliding" (M2)
//   window     = 0                  integer ≥ 0: sliding-window width in tokens (sliding only,
//                                   then 0 < window ≤ seq_len)
//   kv_heads   = 0                  integer ≥ 0: key/value heads, grouped-query attention
//                                   (0 = heads; must divide heads and be a multiple of tp)
//   mlp        = "gelu"             "gelu" | "swiglu" (FC1 makes gate and up: 2·ffn_hidden)
//   rotary     = false              boolean: rotary position embedding (RoPE, Llama): no
//                                   learned seq_len × hidden position table in the parameters
//   dropout    = 0.1                number in [0, 1): dropout probability of hidden states and
//                                   attention probabilities (Megatron's default 0.1); 0 = no
//                                   dropout kernels (Llama-family models)
//   untied_embeddings = false       boolean: the LM head has its own weights (no embedding
//                                   gradient all-reduce between first and last stage)
//   norm       = "layernorm"        "layernorm" | "rmsnorm" (no mean, no bias: Llama, Mixtral)
//   experts    = 0                  integer ≥ 0: mixture of experts; 0 = dense MLPs. A MoE
//                                   layer: router GEMM, top-k, permute, all-to-all dispatch over
//                                   parallel.ep, expert MLPs, all-to-all combine, unpermute
//   top_k      = 1                  integer in [1, experts]: experts per token
//   moe_ffn_hidden = 0              integer ≥ 0: an expert's MLP inner size; 0 = ffn_hidden
//   capacity_factor = 0.0           0 (dropless) or ≥ 1: an expert takes at most
//                                   factor·tokens·top_k/experts tokens, the rest are dropped
//   shared_experts = 0              integer ≥ 0: experts every token goes through (DeepSeek)
//   moe_every  = 1                  integer ≥ 1: every n-th layer is a MoE layer …
//   first_dense_layers = 0          integer ≥ 0: … after this many dense layers
//   routing    = "balanced"         "balanced" | "dirichlet" | "zipf": expert popularity per
//                                   (iteration, micro-batch, layer); the hottest EP rank's load
//                                   scales the expert GEMMs and the all-to-all bytes
//   routing_alpha = 1.0             float > 0: Dirichlet concentration (dirichlet only)
//   routing_exponent = 1.0          float > 0: Zipf exponent s, popularity ∝ rank^−s (zipf only)
//   routing_seed = 1                integer ≥ 0: seed of the routing draws
//
//   [parallel]                      required
//   tp = 1, pp = 1, vpp = 1         integers ≥ 1: tensor, pipeline and virtual-pipeline sizes
//   dp                              integer ≥ 1, optional if top-level gpus is given
//   ep = 1                          integer ≥ 1: expert parallel; divides dp and experts. The
//                                   ep consecutive dp ranks of a block hold experts/ep experts
//                                   each; expert gradients are reduced over the dp/ep blocks
//   ep_a2a = "flat"                 "flat" | "hierarchical": the MoE dispatch/combine all-to-all.
//                                   flat: one all-to-all over the ep group. hierarchical
//                                   (Tutel 2DH, DeepSpeed-MoE): an all-to-all among the ep_node
//                                   EP ranks of each NVLink domain, then one among the ranks of
//                                   the same local index across domains (combine: reversed)
//   ep_node                         integer ≥ 1, required with ep_a2a = "hierarchical" (refused
//                                   otherwise): EP ranks per NVLink domain, divides ep; with
//                                   the linear placement gpus per server / tp (at most ep)
//   max_nodes_per_token = 0         integer ≥ 0, hierarchical only: node-limited routing
//                                   (DeepSeek-V3 §2.1.2, DeepEP): a token's experts lie on at
//                                   most this many NVLink domains (≤ ep / ep_node); it crosses
//                                   the rail once per (token, domain), then fans out over
//                                   NVLink (combine: reduced in the domain, then the rail).
//                                   0 = the plain hierarchical all-to-all (no deduplication)
//   cp = 1                          integer in [1, 1024]: context parallel (ring attention as
//                                   Megatron-Core + Transformer Engine's cp_comm_type "p2p"):
//                                   seq_len / cp tokens per rank (seq_len % 2·cp == 0, causal
//                                   load balance), K/V blocks exchanged around the cp ring,
//                                   gradients reduced over dp·cp; rank order tp-cp-dp-pp; dense
//                                   attention and dense MLPs only
//   first_stage_layers = 0          integers ≥ 0: layers of the first / last virtual pipeline
//   last_stage_layers = 0           stage (Megatron's decoder_first/last_pipeline_num_layers;
//                                   Llama 3 405B drops one layer from each: 126 layers on 16·4
//                                   virtual stages of 2); 0 = even split; the other virtual
//                                   stages share the remaining layers evenly
//   sequence_parallel = false       boolean: Megatron sequence parallelism (needs tp > 1 to matter)
//   pp_scatter_gather = false       boolean: SC'21 scatter/gather: each pipeline send carries
//                                   1/tp of the activation, all-gathered over NVLink inside the
//                                   TP group on arrival (needs tp > 1, no sequence_parallel)
//   zero_stage = 0                  0 | 1 | 2 | 3: 0 all-reduce, 1 distributed optimizer,
//                                   2 MegaScale per-chunk all-gather/reduce-scatter (M4),
//                                   3 ZeRO-3/FSDP: parameters gathered per layer for every
//                                   pass, gradients reduce-scattered per layer
//                                   (schedule.fsdp_prefetch layers gathered ahead)
//   micro_batch = 1                 integer ≥ 1: sequences per micro-batch
//   global_batch                    integer ≥ 1, required: sequences per iteration
//
//   [schedule]                      optional table
//   pipeline = "1f1b"               "1f1b" | "interleaved" | "zb-h1" (M5; vpp > 1 needs
//                                   interleaved; zb-h1: Qi et al. ICLR'24, backward split into
//                                   B (input gradient) and W (weight gradient), W deferred
//                                   into the cool-down; vpp = 1, dense MLPs)
//   iterations = 1                  integer ≥ 1: iterations lowered back to back
//   optimizer = "adam"              "adam" | "lamb" (M3)
//   recompute = false               boolean (true = "full") or "none" | "selective" | "full"
//                                   | "selective-op": activation recomputation in backward;
//                                   selective recomputes only the attention core (Korthikanti
//                                   2022); selective-op is torchtitan's per-op policy (keeps
//                                   the attention output and every other matmul's, re-runs
//                                   the rest; tp = 1, cp = 1, BF16 GEMMs, dense MLPs)
//   grad_reduce_dtype = "bf16"      "bf16" | "fp32": datatype of the DP gradient reduction
//                                   (Megatron-LM reduces fp32 main gradients: twice the bytes)
//   async_data_loading = false      boolean: M8, next batch loaded while gradients sync
//   grad_accumulation_fusion = true boolean: wgrad GEMMs accumulate into the main-gradient
//                                   buffer (Megatron --gradient-accumulation-fusion); false:
//                                   a separate add kernel per weight and micro-batch (SC'21)
//   tp_async_allreduce = true       boolean: the backward's TP collective of the input
//                                   gradient overlaps the wgrad GEMM (Megatron
//                                   --async-tensor-model-parallel-allreduce); false: SC'21
//   recompute_every = 1             integer ≥ 1, with recompute = "full" only: recompute layers
//                                   whose index is a multiple of it (torchtitan's selective
//                                   "layer" checkpointing, ac_freq); the others keep everything
//   dp_bucket_params = 0            integer ≥ 0: with overlap.dp, a chunk's gradients are reduced
//                                   in buckets closed at the first layer boundary at or past this
//                                   many parameters, each launched as its last layer's backward
//                                   ends during the chunk's last backward (PyTorch DDP's
//                                   bucket_cap_mb, Megatron-Core's bucket_size; 1 = one bucket per
//                                   layer, NeMo's distributed Adam); 0: one reduction per chunk
//   host_seconds_per_fp8_module = 0 number in [0, 0.01]: the same with precision.gemm = "fp8"
//                                   (0: host_seconds_per_module)
//   host_seconds_per_module = 0     number in [0, 0.01]: host time of one framework module
//                                   call (a GEMM layer's forward or backward, an attention's
//                                   forward or backward: Python, dispatch, FP8 bookkeeping);
//                                   ops are issued in program order, none starts before it is
//   fsdp_copy_out = false           boolean: ZeRO-3 as PyTorch FSDP2 runs it: each all-gather's
//                                   output copied into the parameters on the compute stream
//   fsdp_prefetch = 1               integer in [0, 8]: ZeRO-3, layers whose parameter all-gather
//                                   is issued ahead of the layer computing (0: each blocks)
//   [schedule.overlap]
//   dp = false                      boolean: M4 prefetch/early reduce-scatter/priorities
//   pp = false                      boolean: M5 decoupled asynchronous send/recv
//   tp = false                      boolean: M6 TP communication chunked against GEMMs
//                                   (needs tp_chunks ≥ 2: refused with 1, where it does nothing)
//   tp_chunks = 1                   integer in [1, 64]: chunks of an overlapped GEMM
//   [schedule.operators]            M7
//   flash_attention = false         boolean: FlashAttention-2 instead of unfused attention
//   fused_layernorm = false         boolean: one fused LayerNorm kernel instead of three passes
//   fused_gelu = false              boolean: fused bias+GeLU instead of two kernels; with
//                                   SwiGLU one kernel for silu(gate)·up instead of two
//   fused_rope = true               boolean: rotary embedding of q and k in one fused kernel
//                                   (TE's fused RoPE); false: eager complex form in fp32
//   fused_qkv = true                boolean: one QKV GEMM and one gate+up GEMM (Megatron);
//                                   false: separate wq/wk/wv and w1/w3 GEMMs (torchtitan)
//   [precision]                     optional table
//   gemm = "bf16"                   "bf16" | "fp8": the transformer layers' GEMMs (QKV,
//                                   projection, FC1, FC2, experts) in FP8 with Transformer
//                                   Engine's delayed scaling (H100 and later; the LM head
//                                   stays BF16 as in Megatron-LM)
//   fp8_amax_reduction = "tp-dp"    "tp-dp" | "tp": ranks the amaxes are all-reduced over
//                                   (Megatron-LM's amax reduction group; "tp" =
//                                   --tp-only-amax-red); only with gemm = "fp8"
#include "config/job_file.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/limits.hpp"

namespace twinscale::config {

namespace s = twinscale::schedules;

namespace {
/// tp·pp, refused (naming `where`) past kMaxRanks rather than overflowing.
std::string replica_name(const s::ParallelSpec& p) { return p.cp > 1 ? "tp·pp·cp" : "tp·pp"; }

int64_t ranks_per_replica(const s::ParallelSpec& p, const std::string& where) {
  const int64_t n = s::saturating_mul(s::saturating_mul(p.tp, p.pp), p.cp);
  if (n > s::kMaxRanks)
    throw ConfigError(where + ": parallel.tp·pp·cp = " + std::to_string(p.tp) + "·" + std::to_string(p.pp) + "·" +
                      std::to_string(p.cp) + " is more than " + std::to_string(s::kMaxRanks) +
                      " ranks (2^20, 8× the largest modelled cluster)");
  return n;
}

void parse_moe_keys(TableReader& m, s::ModelSpec& model) {
  model.norm = m.get_enum("norm", s::kNormKindNames, s::NormKind::LayerNorm);
  model.experts = m.get_int("experts", 0, 0);
  model.top_k = m.get_int("top_k", 1, 1);
  model.moe_ffn_hidden = m.get_int("moe_ffn_hidden", 0, 0);
  model.capacity_factor = m.get_double("capacity_factor", 0.0, 0.0, 1e6);
  model.shared_experts = m.get_int("shared_experts", 0, 0);
  model.moe_every = m.get_int("moe_every", 1, 1);
  model.first_dense_layers = m.get_int("first_dense_layers", 0, 0);
  model.routing = m.get_enum("routing", s::kRoutingKindNames, s::RoutingKind::Balanced);
  model.routing_alpha = m.get_double("routing_alpha", 1.0, 1e-6, 1e6);
  model.routing_exponent = m.get_double("routing_exponent", 1.0, 1e-6, 100.0);
  model.routing_seed = m.get_int("routing_seed", 1, 0);
  if (m.has("routing_alpha") && model.routing != s::RoutingKind::Dirichlet)
    m.fail("routing_alpha", "is set but routing is not \"dirichlet\"; set routing = \"dirichlet\" or remove it");
  if (m.has("routing_exponent") && model.routing != s::RoutingKind::Zipf)
    m.fail("routing_exponent", "is set but routing is not \"zipf\"; set routing = \"zipf\" or remove it");
  if (model.experts == 0)
    for (const char* key : {"top_k", "moe_ffn_hidden", "capacity_factor", "shared_experts", "moe_every",
                            "first_dense_layers", "routing", "routing_seed"})
      if (m.has(key)) m.fail(key, "is set but experts = 0 (a dense model); set model.experts or remove it");
}

// Keys a software stack states (presets/software/*.toml) and a job may override: each
// read with the value in effect (the stack's, else the built-in default) as its default.
void read_stack_schedule(TableReader& sc, s::ScheduleOptions& opt) {
  opt.grad_reduce_fp32 =
      sc.get_enum<bool>("grad_reduce_dtype", {{"bf16", false}, {"fp32", true}}, opt.grad_reduce_fp32);
  opt.async_data_loading = sc.get_bool("async_data_loading", opt.async_data_loading);
  opt.grad_accumulation_fusion = sc.get_bool("grad_accumulation_fusion", opt.grad_accumulation_fusion);
  opt.tp_async_allreduce = sc.get_bool("tp_async_allreduce", opt.tp_async_allreduce);
  opt.fsdp_prefetch = sc.get_int("fsdp_prefetch", opt.fsdp_prefetch, 0, 8);
  opt.fsdp_copy_out = sc.get_bool("fsdp_copy_out", opt.fsdp_copy_out);
  opt.host_seconds_per_module = sc.get_double("host_seconds_per_module", opt.host_seconds_per_module, 0.0, 1e-2);
  opt.host_seconds_per_fp8_module =
      sc.get_double("host_seconds_per_fp8_module", opt.host_seconds_per_fp8_module, 0.0, 1e-2);
  opt.dp_bucket_params = sc.get_int("dp_bucket_params", opt.dp_bucket_params, 0, s::kMaxDpBucketParams);
  {
    TableReader o = sc.table("overlap");
    opt.overlap.dp = o.get_bool("dp", opt.overlap.dp);
    opt.overlap.pp = o.get_bool("pp", opt.overlap.pp);
    opt.overlap.tp = o.get_bool("tp", opt.overlap.tp);
    opt.overlap.tp_chunks = o.get_int("tp_chunks", opt.overlap.tp_chunks, 1, 64);
    o.finish();
  }
  {
    TableReader o = sc.table("operators");
    opt.operators.flash_attention = o.get_bool("flash_attention", opt.operators.flash_attention);
    opt.operators.fused_layernorm = o.get_bool("fused_layernorm", opt.operators.fused_layernorm);
    opt.operators.fused_gelu = o.get_bool("fused_gelu", opt.operators.fused_gelu);
    opt.operators.fused_rope = o.get_bool("fused_rope", opt.operators.fused_rope);
    opt.operators.fused_qkv = o.get_bool("fused_qkv", opt.operators.fused_qkv);
    o.finish();
  }
}

void read_stack_precision(TableReader& pr, s::ScheduleOptions& opt) {
  opt.fp8_amax_reduction =
      pr.get_enum("fp8_amax_reduction", s::kFp8AmaxReductionNames, std::optional(opt.fp8_amax_reduction));
}

/// Reads the software stack `ref` (a preset of presets/software/, or with
/// `document_path` a file in the job's folder) into `opt`. A stack states only stack
/// facts: [schedule] (with [schedule.overlap] and [schedule.operators]) and [precision]
/// keys that describe the software, never the job's own choices (pipeline, recompute…).
void apply_software(const std::string& ref, const std::string& job_file, const std::string* document_path,
                    s::ScheduleOptions& opt) {
  std::string text, name;
  const auto presets = preset_names("software");
  if (std::find(presets.begin(), presets.end(), ref) != presets.end()) {
    text = std::string(preset_text("software", ref));
    name = "software preset " + ref;
  } else if (document_path != nullptr) {
    const std::string path = resolve_document_reference(*document_path, ref, "software", "software");
    text = read_config_file(path, "software file");
    name = path;
  } else {
    std::string valid;
    for (const auto& n : presets) valid += (valid.empty() ? "" : ", ") + n;
    throw ConfigError(job_file + ": key 'software' = \"" + ref + "\" is not a software preset; valid: " + valid);
  }
  const toml::table root = parse_toml(text, name);
  TableReader top(root, name);
  top.get_string("name");
  top.get_string("description", std::string());
  TableReader sc = top.table("schedule");
  read_stack_schedule(sc, opt);
  sc.finish();
  TableReader pr = top.table("precision");
  read_stack_precision(pr, opt);
  pr.finish();
  top.finish();
}
} // namespace

std::string JobEdits::note() const {
  std::vector<std::string> parts;
  if (gpus) parts.push_back("--gpus " + std::to_string(*gpus));
  if (global_batch) parts.push_back("--global-batch " + std::to_string(*global_batch));
  for (const KeyOverride& o : set) parts.push_back("--set " + o.text);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? " (with " : ", ") + p;
  return out.empty() ? out : out + ")";
}

void JobEdits::apply(toml::table& doc) const {
  apply_key_overrides(doc, set);
  if (gpus) {
    doc.insert_or_assign("gpus", *gpus);
    if (toml::table* par = doc["parallel"].as_table()) par->erase("dp"); // re-derived from gpus
  }
  if (global_batch) {
    if (!doc["parallel"].is_table()) doc.insert_or_assign("parallel", toml::table{});
    doc["parallel"].as_table()->insert_or_assign("global_batch", *global_batch);
  }
}

s::JobSpec parse_job(std::string_view text, const std::string& file_name, const std::string* document_path,
                     const JobEdits& edits) {
  const std::string file = file_name + edits.note();
  toml::table root = parse_toml(text, file_name);
  edits.apply(root);
  TableReader top(root, file);
  s::JobSpec job;
  job.name = top.get_string("name");
  job.cluster = top.get_string("cluster");
  std::optional<int64_t> gpus;
  if (top.has("gpus")) gpus = top.get_int("gpus", std::nullopt, 1);

  TableReader m = top.table("model", true);
  job.model.name = job.name;
  job.model.layers = m.get_int("layers", std::nullopt, 1);
  job.model.hidden = m.get_int("hidden", std::nullopt, 1);
  job.model.heads = m.get_int("heads", std::nullopt, 1);
  job.model.seq_len = m.get_int("seq_len", std::nullopt, 1);
  job.model.vocab = m.get_int("vocab", std::nullopt, 1);
  job.model.ffn_hidden = m.get_int("ffn_hidden", 0, 0);
  job.model.kv_heads = m.get_int("kv_heads", 0, 0);
  job.model.mlp = m.get_enum("mlp", s::kMlpKindNames, s::MlpKind::Gelu);
  job.model.untied_embeddings = m.get_bool("untied_embeddings", false);
  job.model.rotary = m.get_bool("rotary", false);
  job.model.dropout = m.get_double("dropout", s::ModelSpec{}.dropout, 0.0, 0.999);
  // 0 means 4·hidden; saturated so that a huge hidden is reported as such by check_job
  if (job.model.ffn_hidden == 0) job.model.ffn_hidden = s::saturating_mul(4, job.model.hidden);
  job.model.block = m.get_enum("block", s::kBlockKindNames, s::BlockKind::Serial);
  job.model.attention = m.get_enum("attention", s::kAttentionKindNames, s::AttentionKind::Dense);
  job.model.window = m.get_int("window", 0, 0);
  if (job.model.attention == s::AttentionKind::Dense && m.has("window") && job.model.window != 0)
    m.fail("window", "is set but attention is \"dense\"; set attention = \"sliding\" or remove it");
  parse_moe_keys(m, job.model);
  m.finish();

  TableReader p = top.table("parallel", true);
  auto& par = job.parallel;
  par.tp = p.get_int("tp", 1, 1);
  par.pp = p.get_int("pp", 1, 1);
  par.vpp = p.get_int("vpp", 1, 1);
  par.ep = p.get_int("ep", 1, 1);
  if (p.has("etp")) par.etp = p.get_int("etp", std::nullopt, 1); // absent: unfolded experts
  par.cp = p.get_int("cp", 1, 1, 1024);
  par.ep_a2a = p.get_enum("ep_a2a", s::kEpAllToAllNames, s::EpAllToAll::Flat);
  if (par.ep_a2a == s::EpAllToAll::Hierarchical) {
    if (!p.has("ep_node"))
      p.fail("ep_node", "is missing; ep_a2a = \"hierarchical\" needs the EP ranks per NVLink domain "
                        "(gpus per server / tp, at most ep)");
    par.ep_node = p.get_int("ep_node", std::nullopt, 1);
    par.max_nodes_per_token = p.get_int("max_nodes_per_token", 0, 0);
  } else {
    for (const char* key : {"ep_node", "max_nodes_per_token"})
      if (p.has(key)) p.fail(key, "is set but ep_a2a is \"flat\"; set ep_a2a = \"hierarchical\" or remove it");
  }
  par.first_stage_layers = p.get_int("first_stage_layers", 0, 0);
  par.last_stage_layers = p.get_int("last_stage_layers", 0, 0);
  par.sequence_parallel = p.get_bool("sequence_parallel", false);
  par.pp_scatter_gather = p.get_bool("pp_scatter_gather", false);
  par.zero_stage = p.get_int("zero_stage", 0, 0, 3);
  par.micro_batch = p.get_int("micro_batch", 1, 1);
  par.global_batch = p.get_int("global_batch", std::nullopt, 1);
  if (p.has("dp")) {
    par.dp = p.get_int("dp", std::nullopt, 1);
    const int64_t product = s::saturating_mul(s::saturating_mul(s::saturating_mul(par.tp, par.pp), par.dp), par.cp);
    if (gpus && *gpus != product)
      top.fail("gpus", "is " + std::to_string(*gpus) + " but tp·pp·dp·cp = " + std::to_string(par.tp) + "·" +
                           std::to_string(par.pp) + "·" + std::to_string(par.dp) + "·" + std::to_string(par.cp) +
                           " = " + std::to_string(product) + "; make them agree or omit parallel.dp");
  } else {
    if (!gpus)
      p.fail("dp", "is missing; give parallel.dp or a top-level gpus from which dp = "
                   "gpus / (tp·pp) is derived");
    const int64_t per_replica = ranks_per_replica(par, file);
    if (*gpus % per_replica != 0)
      top.fail("gpus", "is " + std::to_string(*gpus) + ", not a multiple of " + replica_name(par) + " = " +
                           std::to_string(per_replica) + "; dp = gpus / (" + replica_name(par) + ") must be whole");
    par.dp = *gpus / per_replica;
  }
  p.finish();

  TableReader sc = top.table("schedule");
  auto& opt = job.options;
  // The software stack's facts first (its own file named in its messages), then the
  // job's keys over them.
  if (top.has("software")) {
    job.software = top.get_string("software");
    apply_software(job.software, file, document_path, opt);
  }
  opt.pipeline = sc.get_enum("pipeline", s::kPipelineKindNames, s::PipelineKind::OneFOneB);
  opt.iterations = sc.get_int("iterations", 1, 1, 1000);
  opt.optimizer = sc.get_enum("optimizer", s::kOptimizerKindNames, s::OptimizerKind::Adam);
  if (sc.holds_string("recompute")) {
    const auto r =
        sc.get_enum<int>("recompute", {{"none", 0}, {"selective", 1}, {"full", 2}, {"selective-op", 3}});
    opt.recompute = r == 2 || r == 3;
    opt.recompute_saves_alternate_matmuls = r == 3;
    opt.selective_recompute = r == 1;
  } else {
    opt.recompute = sc.get_bool("recompute", false);
  }
  opt.recompute_every = sc.get_int("recompute_every", 1, 1, s::kMaxLayers);
  if (sc.has("recompute_every") && (!opt.recompute || opt.recompute_saves_alternate_matmuls))
    sc.fail("recompute_every", "is set but recompute is not \"full\"; set recompute = \"full\" or remove it");
  read_stack_schedule(sc, opt);
  sc.finish();
  // TP overlap splits each GEMM and its collective into tp_chunks pieces: with one piece
  // there is nothing to overlap, and the key would silently do nothing.
  if (opt.overlap.tp && opt.overlap.tp_chunks <= 1)
    sc.fail("overlap.tp", "is true but schedule.overlap.tp_chunks is " + std::to_string(opt.overlap.tp_chunks) +
                              ": TP overlap chunks each GEMM against its collective, so it needs tp_chunks ≥ 2; "
                              "set schedule.overlap.tp_chunks (the megascale stack uses 4) or tp = false");
  {
    TableReader pr = top.table("precision");
    opt.gemm_precision = pr.get_enum("gemm", s::kGemmPrecisionNames, s::GemmPrecision::Bf16);
    if (pr.has("fp8_amax_reduction") && !opt.fp8())
      pr.fail("fp8_amax_reduction", "is set but gemm is not \"fp8\"; set gemm = \"fp8\" or remove it");
    read_stack_precision(pr, opt);
    pr.finish();
  }
  top.finish();

  try {
    s::check_job(job);
  } catch (const s::JobError& e) {
    throw s::JobError(file + ": " + e.what());
  }
  return job;
}

s::JobSpec load_job(const std::string& path, const JobEdits& edits) {
  s::JobSpec job = parse_job(read_config_file(path, "job file"), path, &path, edits);
  job.cluster = resolve_document_reference(path, job.cluster, "cluster", "clusters");
  return job;
}

s::JobSpec load_job_preset(const std::string& name, const JobEdits& edits) {
  return parse_job(preset_text("jobs", name), "preset " + name, nullptr, edits);
}

void apply_overrides(s::JobSpec& job, std::optional<int64_t> gpus, std::optional<int64_t> global_batch) {
  if (gpus) {
    if (*gpus < 1) throw ConfigError("--gpus is " + std::to_string(*gpus) + "; must be ≥ 1");
    const int64_t per_replica = ranks_per_replica(job.parallel, "job " + job.name);
    if (*gpus % per_replica != 0)
      throw ConfigError("--gpus " + std::to_string(*gpus) + " is not a multiple of " + replica_name(job.parallel) +
                        " = " + std::to_string(per_replica) + " (job " + job.name + "); dp = gpus / (" +
                        replica_name(job.parallel) + ") must be whole");
    job.parallel.dp = *gpus / per_replica;
  }
  if (global_batch) {
    if (*global_batch < 1) throw ConfigError("--global-batch is " + std::to_string(*global_batch) + "; must be ≥ 1");
    job.parallel.global_batch = *global_batch;
  }
  try {
    s::check_job(job);
  } catch (const s::JobError& e) {
    std::string given;
    if (gpus) given += "--gpus " + std::to_string(*gpus) + " (dp = " + std::to_string(job.parallel.dp) + ")";
    if (global_batch)
      given += std::string(given.empty() ? "" : ", ") + "--global-batch " + std::to_string(*global_batch);
    throw s::JobError(given.empty() ? std::string(e.what()) : "with " + given + ": " + e.what());
  }
}

} // namespace twinscale::config
