#include "schedules/job_keys.hpp"

#include <iterator>
#include <string>
#include <utility>

#include "schedules/limits.hpp"

namespace twinscale::schedules {

namespace {
using J = JobSpec;
using M = ModelSpec;
using P = ParallelSpec;
using S = ScheduleOptions;
using O = OverlapSpec;
using Op = OperatorSpec;

// Conditions under which a key means something (a file stating it otherwise is refused).
bool is_moe(const J& j) { return j.model.experts > 0; }
bool sliding_or_unset(const J& j) { return j.model.attention == AttentionKind::Sliding || j.model.window == 0; }
bool dirichlet(const J& j) { return j.model.routing == RoutingKind::Dirichlet; }
bool zipf(const J& j) { return j.model.routing == RoutingKind::Zipf; }
bool hierarchical(const J& j) { return j.parallel.ep_a2a == EpAllToAll::Hierarchical; }
bool node_limited(const J& j) { return hierarchical(j) && j.parallel.max_nodes_per_token > 0; }
bool full_recompute(const J& j) { return j.options.recompute && !j.options.recompute_saves_alternate_matmuls; }
bool fp8(const J& j) { return j.options.fp8(); }

constexpr const char* kDenseWhy = "is set but experts = 0 (a dense model); set model.experts or remove it";
constexpr const char* kFlatWhy = "is set but ep_a2a is \"flat\"; set ep_a2a = \"hierarchical\" or remove it";

void model_keys(std::vector<JobKey>& k) {
  k.push_back(member<J, &J::model, &M::layers>("model.layers")
                  .range(1)
                  .must_be_given()
                  .in_json_always_present()
                  .says("transformer layers"));
  k.push_back(member<J, &J::model, &M::hidden>("model.hidden")
                  .range(1)
                  .must_be_given()
                  .in_json_always_present()
                  .says("hidden size h"));
  k.push_back(member<J, &J::model, &M::heads>("model.heads")
                  .range(1)
                  .must_be_given()
                  .in_json_always_present()
                  .says("attention heads (hidden % heads = 0)"));
  k.push_back(member<J, &J::model, &M::seq_len>("model.seq_len")
                  .range(1)
                  .in("tokens")
                  .must_be_given()
                  .in_json_always_present()
                  .says("sequence length s"));
  k.push_back(member<J, &J::model, &M::vocab>("model.vocab")
                  .range(1)
                  .must_be_given()
                  .in_json_always_present()
                  .says("vocabulary size V"));
  k.push_back(member<J, &J::model, &M::ffn_hidden>("model.ffn_hidden")
                  .range(0)
                  .in_json_always_present()
                  .says("MLP inner size; 0 means 4·hidden (schedule JSON holds the size in effect)"));
  k.push_back(member<J, &J::model, &M::kv_heads>("model.kv_heads")
                  .range(0)
                  .says("key/value heads, grouped-query attention (0 = heads; divides heads, a multiple of tp)"));
  k.push_back(choice<J, &J::model, &M::mlp>("model.mlp", kMlpKindNames)
                  .says("MLP kind; swiglu: FC1 makes gate and up (2·ffn_hidden); squared_relu: relu(x)², one "
                        "compiled kernel each way (Nemotron)"));
  k.push_back(member<J, &J::model, &M::untied_embeddings>("model.untied_embeddings")
                  .says("the LM head has its own weights (no embedding all-reduce between first and last stage)"));
  k.push_back(member<J, &J::model, &M::rotary>("model.rotary")
                  .json_unless_default()
                  .says("rotary position embedding (no learned seq_len × hidden position table)"));
  k.push_back(member<J, &J::model, &M::dropout>("model.dropout")
                  .range_number(0.0, 0.999)
                  .json_unless_default()
                  .says("dropout probability of hidden states and attention probabilities; 0 = no dropout kernels"));
  k.push_back(choice<J, &J::model, &M::block>("model.block", kBlockKindNames)
                  .in_json_always_present()
                  .says("transformer block; parallel: y = x + MLP(LN x) + Attn(LN x)"));
  k.push_back(choice<J, &J::model, &M::attention>("model.attention", kAttentionKindNames)
                  .in_json_always_present()
                  .says("attention kind; sliding: each token attends to the last `window` tokens"));
  k.push_back(member<J, &J::model, &M::window>("model.window")
                  .range(0)
                  .in("tokens")
                  .in_json_always_present()
                  .only_when(sliding_or_unset, "attention = \"sliding\"",
                             "is set but attention is \"dense\"; set attention = \"sliding\" or remove it")
                  .says("sliding-window width (0 < window ≤ seq_len with sliding attention)"));
}

void moe_keys(std::vector<JobKey>& k) {
  k.push_back(choice<J, &J::model, &M::norm>("model.norm", kNormKindNames)
                  .says("normalisation; rmsnorm: no mean, no bias (Llama, Mixtral)"));
  k.push_back(member<J, &J::model, &M::experts>("model.experts")
                  .range(0)
                  .says("mixture of experts: routed experts per MoE layer; 0 = dense MLPs"));
  const auto moe = [](JobKey f) { return f.only_when(is_moe, "model.experts > 0", kDenseWhy); };
  k.push_back(moe(member<J, &J::model, &M::top_k>("model.top_k").range(1).says("experts per token (≤ experts)")));
  k.push_back(moe(member<J, &J::model, &M::moe_ffn_hidden>("model.moe_ffn_hidden")
                      .range(0)
                      .says("an expert's MLP inner size; 0 = ffn_hidden")));
  k.push_back(moe(member<J, &J::model, &M::capacity_factor>("model.capacity_factor")
                      .range_number(0.0, 1e6)
                      .says("0 = dropless; else (≥ 1) an expert takes at most factor·tokens·top_k/experts tokens")));
  k.push_back(moe(member<J, &J::model, &M::shared_experts>("model.shared_experts")
                      .range(0)
                      .says("experts every token goes through (DeepSeek), each of moe_ffn_hidden")));
  k.push_back(moe(member<J, &J::model, &M::moe_every>("model.moe_every")
                      .range(1)
                      .says("every n-th layer (after first_dense_layers) is a MoE layer")));
  k.push_back(moe(member<J, &J::model, &M::first_dense_layers>("model.first_dense_layers")
                      .range(0)
                      .says("dense layers before the first MoE layer")));
  k.push_back(moe(choice<J, &J::model, &M::routing>("model.routing", kRoutingKindNames)
                      .says("expert popularity per (iteration, micro-batch, layer): even, or drawn from a "
                            "distribution; the hottest EP rank's load scales expert GEMMs and all-to-alls")));
  k.push_back(member<J, &J::model, &M::routing_alpha>("model.routing_alpha")
                  .range_number(1e-6, 1e6)
                  .only_when(dirichlet, "routing = \"dirichlet\"",
                             "is set but routing is not \"dirichlet\"; set routing = \"dirichlet\" or remove it")
                  .says("Dirichlet concentration (smaller: more skewed)"));
  k.push_back(member<J, &J::model, &M::routing_exponent>("model.routing_exponent")
                  .range_number(1e-6, 100.0)
                  .only_when(zipf, "routing = \"zipf\"",
                             "is set but routing is not \"zipf\"; set routing = \"zipf\" or remove it")
                  .says("Zipf exponent s, popularity ∝ rank^−s (larger: more skewed)"));
  k.push_back(moe(member<J, &J::model, &M::routing_seed>("model.routing_seed")
                      .range(0)
                      .says("seed of the routing "
                            "draws")));
}

void parallel_keys(std::vector<JobKey>& k) {
  k.push_back(
      member<J, &J::parallel, &P::tp>("parallel.tp").range(1).in_json_always_present().says("tensor-parallel size"));
  k.push_back(member<J, &J::parallel, &P::pp>("parallel.pp")
                  .range(1)
                  .in_json_always_present()
                  .says("pipeline-parallel size (stages)"));
  k.push_back(
      member<J, &J::parallel, &P::vpp>("parallel.vpp")
          .range(1)
          .in_json_always_present()
          .says("virtual pipeline stages (model chunks) per pipeline rank; > 1 needs pipeline = \"interleaved\""));
  k.push_back(member<J, &J::parallel, &P::dp>("parallel.dp")
                  .range(1)
                  .read_by_hand()
                  .in_json_always_present()
                  .default_is("gpus / (tp·cp·pp)")
                  .says("data-parallel size; optional when the top-level gpus is given (they must agree)"));
  k.push_back(
      member<J, &J::parallel, &P::ep>("parallel.ep")
          .range(1)
          .says("expert parallel: experts sharded over blocks of ep data-parallel ranks (divides dp and experts)"));
  k.push_back(member<J, &J::parallel, &P::etp>("parallel.etp")
                  .range(1)
                  .json_unless_default()
                  .default_is("unset (experts unfolded)")
                  .says("MoE parallel folding: expert tensor-parallel size; the MoE layers re-split tp·cp·dp "
                        "as etp × ep × expert-dp (only 1 is modelled)"));
  k.push_back(member<J, &J::parallel, &P::cp>("parallel.cp")
                  .range(1, 1024)
                  .json_unless_default()
                  .says("context parallel (ring attention): seq_len / cp tokens per rank (seq_len % 2·cp = 0); rank "
                        "order tp-cp-dp-pp; dense attention and MLPs only"));
  k.push_back(choice<J, &J::parallel, &P::ep_a2a>("parallel.ep_a2a", kEpAllToAllNames)
                  .json_unless_default()
                  .says("MoE dispatch/combine all-to-all; hierarchical: inside each NVLink domain of ep_node "
                        "ranks, then across domains (Tutel 2DH)"));
  k.push_back(member<J, &J::parallel, &P::ep_node>("parallel.ep_node")
                  .range(1)
                  .json_only_when(hierarchical)
                  .only_when(hierarchical, "ep_a2a = \"hierarchical\" (then required)", kFlatWhy)
                  .default_is("unset")
                  .says("EP ranks per NVLink domain (divides ep)"));
  k.push_back(member<J, &J::parallel, &P::max_nodes_per_token>("parallel.max_nodes_per_token")
                  .range(0)
                  .json_only_when(node_limited)
                  .only_when(hierarchical, "ep_a2a = \"hierarchical\"", kFlatWhy)
                  .says("node-limited routing (DeepSeek-V3): a token's experts lie on at most this many NVLink "
                        "domains; 0 = unlimited"));
  k.push_back(member<J, &J::parallel, &P::first_stage_layers>("parallel.first_stage_layers")
                  .range(0)
                  .says("layers of the first virtual pipeline stage (Megatron's decoder_first_pipeline_num_layers); "
                        "0 = an even split"));
  k.push_back(member<J, &J::parallel, &P::last_stage_layers>("parallel.last_stage_layers")
                  .range(0)
                  .says("layers of the last virtual pipeline stage; 0 = an even split"));
  k.push_back(member<J, &J::parallel, &P::sequence_parallel>("parallel.sequence_parallel")
                  .in_json_always_present()
                  .says("Megatron sequence parallelism (matters with tp > 1)"));
  k.push_back(member<J, &J::parallel, &P::pp_scatter_gather>("parallel.pp_scatter_gather")
                  .says("each pipeline send carries 1/tp of the activation, all-gathered over the TP group on "
                        "arrival (SC'21; tp > 1, no sequence_parallel)"));
  k.push_back(member<J, &J::parallel, &P::zero_stage>("parallel.zero_stage")
                  .range(0, 3)
                  .in_json_always_present()
                  .says("0 all-reduce, 1 distributed optimizer, 2 per-chunk all-gather/reduce-scatter (MegaScale), "
                        "3 ZeRO-3/FSDP (parameters gathered per layer)"));
  k.push_back(member<J, &J::parallel, &P::micro_batch>("parallel.micro_batch")
                  .range(1)
                  .in("sequences")
                  .in_json_always_present()
                  .says("sequences per micro-batch"));
  k.push_back(member<J, &J::parallel, &P::global_batch>("parallel.global_batch")
                  .range(1)
                  .in("sequences")
                  .must_be_given()
                  .in_json_always_present()
                  .says("sequences per iteration"));
}

// schedule.recompute names both flags of ScheduleOptions; schedule JSON keeps the flags.
JobKey recompute_key() {
  JobKey f;
  f.key = "schedule.recompute";
  f.type = KeyType::Name;
  f.names = enum_names_vector(kRecomputeKindNames);
  f.accepts_bool = true;
  f.true_name = std::string(enum_name(kRecomputeKindNames, RecomputeKind::Full));
  f.false_name = std::string(enum_name(kRecomputeKindNames, RecomputeKind::None));
  f.doc = "activation recomputation in backward; true = \"full\"; selective: the attention core only; "
          "selective-op: torchtitan's per-op policy (the attention output and the 1st, 3rd … matmul of each "
          "layer kept, the rest re-run; tp = 1, cp = 1, BF16 GEMMs, dense MLPs)";
  f.get = [](const J& j) {
    const auto r = j.options.recompute_saves_alternate_matmuls ? RecomputeKind::SelectiveOp
                   : j.options.recompute                       ? RecomputeKind::Full
                   : j.options.selective_recompute             ? RecomputeKind::Selective
                                                               : RecomputeKind::None;
    return KeyValue(std::string(enum_name(kRecomputeKindNames, r)));
  };
  f.set = [](J& j, const KeyValue& v) {
    const auto r = *enum_from_name(kRecomputeKindNames, std::get<std::string>(v));
    j.options.recompute = r == RecomputeKind::Full || r == RecomputeKind::SelectiveOp;
    j.options.recompute_saves_alternate_matmuls = r == RecomputeKind::SelectiveOp;
    j.options.selective_recompute = r == RecomputeKind::Selective;
  };
  return f;
}

void schedule_keys(std::vector<JobKey>& k) {
  k.push_back(choice<J, &J::options, &S::pipeline>("schedule.pipeline", kPipelineKindNames)
                  .in_json_always_present()
                  .says("pipeline schedule; vpp > 1 needs interleaved; zb-h1: backward split into B and W, W "
                        "deferred into the cool-down (vpp = 1, dense MLPs)"));
  k.push_back(member<J, &J::options, &S::iterations>("schedule.iterations")
                  .range(1, 1000)
                  .in_json_always_present()
                  .says("iterations lowered back to back"));
  k.push_back(choice<J, &J::options, &S::optimizer>("schedule.optimizer", kOptimizerKindNames)
                  .in_json_always_present()
                  .says("optimizer"));
  k.push_back(choice<J, &J::options, &S::optimizer_kernels>("schedule.optimizer_kernels", kOptimizerKernelsNames)
                  .stack_fact()
                  .json_unless_default()
                  .says("how the Adam step and gradient clipping run: fused (one multi-tensor kernel, 28 bytes per "
                        "element; the norm read once, scaling only when clipping) or foreach (PyTorch's "
                        "AdamW(foreach=True): eight passes, 80 bytes per fp32 element; clip_grad_norm_ scales the "
                        "gradients at every step, 8 more); adam only"));
  k.push_back(recompute_key());
  k.push_back(member<J, &J::options, &S::recompute>("schedule.recompute").not_in_files().in_json_always_present());
  k.push_back(member<J, &J::options, &S::selective_recompute>("schedule.selective_recompute").not_in_files());
  k.push_back(
      member<J, &J::options, &S::recompute_saves_alternate_matmuls>("schedule.recompute_saves_alternate_matmuls")
          .not_in_files()
          .json_unless_default());
  k.push_back(member<J, &J::options, &S::recompute_every>("schedule.recompute_every")
                  .range(1, kMaxLayers)
                  .json_unless_default()
                  .only_when(full_recompute, "recompute = \"full\"",
                             "is set but recompute is not \"full\"; set recompute = \"full\" or remove it")
                  .says("recompute only layers whose index is a multiple of it (torchtitan's ac_freq)"));
  k.push_back(choice<J, &J::options, &S::grad_reduce_fp32>("schedule.grad_reduce_dtype", kGradReduceDtypeNames)
                  .stack_fact()
                  .says("datatype of the DP gradient reduction (fp32: twice the bytes)"));
  k.push_back(choice<J, &J::options, &S::master_weights>("schedule.master_weights", kMasterWeightsNames)
                  .stack_fact()
                  .json_unless_default()
                  .says("the optimizer's master copy of each weight: fp32 (4 bytes, beside Adam's 8), or "
                        "bf16_remainder: the low 16 bits of the fp32 value, whose high half is the bf16 weight "
                        "(2 bytes; Apex DistributedFusedAdam's store_param_remainders)"));
  k.push_back(member<J, &J::options, &S::async_data_loading>("schedule.async_data_loading")
                  .stack_fact()
                  .in_json_always_present()
                  .says("next batch loaded while gradients synchronise"));
  k.push_back(member<J, &J::options, &S::grad_accumulation_fusion>("schedule.grad_accumulation_fusion")
                  .stack_fact()
                  .says("wgrad GEMMs accumulate into the main-gradient buffer; false: an add kernel per weight "
                        "and micro-batch (SC'21)"));
  k.push_back(member<J, &J::options, &S::tp_async_allreduce>("schedule.tp_async_allreduce")
                  .stack_fact()
                  .says("the backward's TP collective of the input gradient overlaps the wgrad GEMM"));
  k.push_back(member<J, &J::options, &S::fsdp_prefetch>("schedule.fsdp_prefetch")
                  .range(0, 8)
                  .in("layers")
                  .stack_fact()
                  .says("ZeRO-3: layers whose parameter all-gather is issued ahead of the layer computing (0: "
                        "each blocks)"));
  k.push_back(member<J, &J::options, &S::fsdp_copy_out>("schedule.fsdp_copy_out")
                  .stack_fact()
                  .json_unless_default()
                  .says("ZeRO-3 as FSDP2: each all-gather's output copied into the parameters on the compute "
                        "stream"));
  k.push_back(member<J, &J::options, &S::fsdp_grad_copy_in>("schedule.fsdp_grad_copy_in")
                  .stack_fact()
                  .json_unless_default()
                  .says("ZeRO-3 as FSDP2: each layer's gradients copied into the reduce-scatter's flat input "
                        "in the reduce dtype, the compute stream waiting for the copy"));
  k.push_back(member<J, &J::options, &S::fsdp_grad_predivide>("schedule.fsdp_grad_predivide")
                  .stack_fact()
                  .json_unless_default()
                  .says("ZeRO-3 as FSDP2 of early 2024: the reduce-scatter's input (the flat copy, or without "
                        "fsdp_grad_copy_in the 16-bit gradients) divided in place by the pre-divide factor "
                        "before the compute stream goes on"));
  k.push_back(member<J, &J::options, &S::host_seconds_per_module>("schedule.host_seconds_per_module")
                  .range_number(0.0, 1e-2)
                  .in("s")
                  .stack_fact()
                  .json_unless_default()
                  .says("host time of one framework module call; a GPU op starts no earlier than the host "
                        "issues it; 0 = the host is never the bottleneck"));
  k.push_back(member<J, &J::options, &S::host_seconds_per_fp8_module>("schedule.host_seconds_per_fp8_module")
                  .range_number(0.0, 1e-2)
                  .in("s")
                  .stack_fact()
                  .json_unless_default()
                  .says("the same with precision.gemm = \"fp8\"; 0 = host_seconds_per_module"));
  k.push_back(member<J, &J::options, &S::dp_bucket_params>("schedule.dp_bucket_params")
                  .range(0, kMaxDpBucketParams)
                  .in("parameters")
                  .stack_fact()
                  .json_unless_default()
                  .says("with overlap.dp, gradients reduced in buckets of about this many parameters (1 = one "
                        "bucket per layer); 0 = one reduction per chunk"));
}

void overlap_and_operator_keys(std::vector<JobKey>& k) {
  const auto always = [](JobKey f) { return f.stack_fact().in_json_always_present(); };
  k.push_back(always(member<J, &J::options, &S::overlap, &O::dp>("schedule.overlap.dp")
                         .says("DP overlap: prefetched all-gathers, early reduce-scatters, priorities")));
  k.push_back(always(member<J, &J::options, &S::overlap, &O::pp>("schedule.overlap.pp")
                         .says("PP overlap: decoupled asynchronous send/receive")));
  k.push_back(always(member<J, &J::options, &S::overlap, &O::tp>("schedule.overlap.tp")
                         .says("TP communication chunked against the GEMMs (needs tp_chunks ≥ 2)")));
  k.push_back(always(member<J, &J::options, &S::overlap, &O::tp_chunks>("schedule.overlap.tp_chunks")
                         .range(1, 64)
                         .says("chunks an overlapped TP GEMM and its collective are split into")));
  // Transformer Engine userbuffers: one key per ub_cfg role, named and described from
  // schedules/job.hpp kTeUbRoles (its member pointers are constants: template arguments)
  [&k]<size_t... I>(std::index_sequence<I...>) {
    (k.push_back(member<J, &J::options, &S::overlap, kTeUbRoles[I].sms>(std::string("schedule.overlap.tp_sms_") +
                                                                        kTeUbRoles[I].te_name)
                     .stack_fact()
                     .json_unless_default()
                     .range(-1, 255)
                     .says(std::string("with overlap.tp, the SMs Transformer Engine's userbuffers take for ") +
                           kTeUbRoles[I].te_name + " (" + kTeUbRoles[I].op_name +
                           "): its ub_cfg num_sm, 0 for method ring_exchange (copy engines); -1 = the channels "
                           "asked for")),
     ...);
  }
  (std::make_index_sequence<std::size(kTeUbRoles)>{});
  k.push_back(always(member<J, &J::options, &S::operators, &Op::flash_attention>("schedule.operators.flash_attention")
                         .says("FlashAttention-2 instead of unfused attention")));
  k.push_back(choice<J, &J::options, &S::operators, &Op::attention_backend>("schedule.operators.attention_backend",
                                                                            kAttentionBackendNames)
                  .stack_fact()
                  .json_unless_default()
                  .says("with flash_attention, the fused-attention kernel the stack runs: flash-attn-2, or "
                        "cudnn (Transformer Engine's FusedAttention, its choice on Hopper and later unless "
                        "NVTE_FUSED_ATTN=0; the GPU needs cudnn_attention_* figures in the catalogue)"));
  k.push_back(always(member<J, &J::options, &S::operators, &Op::fused_layernorm>("schedule.operators.fused_layernorm")
                         .says("one fused LayerNorm kernel instead of three passes")));
  k.push_back(always(member<J, &J::options, &S::operators, &Op::fused_gelu>("schedule.operators.fused_gelu")
                         .says("fused bias+GeLU, or one SwiGLU kernel, instead of two kernels")));
  k.push_back(member<J, &J::options, &S::operators, &Op::fused_rope>("schedule.operators.fused_rope")
                  .stack_fact()
                  .json_unless_default()
                  .says("rotary embedding of q and k in one fused kernel; false: eager complex form in fp32"));
  k.push_back(member<J, &J::options, &S::operators, &Op::fused_qkv>("schedule.operators.fused_qkv")
                  .stack_fact()
                  .json_unless_default()
                  .says("one QKV GEMM and one gate+up GEMM; false: separate wq/wk/wv and w1/w3 GEMMs"));
  k.push_back(choice<J, &J::options, &S::gemm_precision>("precision.gemm", kGemmPrecisionNames)
                  .json_at("schedule.precision.gemm")
                  .json_only_when(fp8)
                  .in_json_always_present()
                  .says("the transformer layers' GEMMs; fp8: Transformer Engine's delayed scaling (H100 and "
                        "later; the LM head stays BF16)"));
  k.push_back(choice<J, &J::options, &S::fp8_amax_reduction>("precision.fp8_amax_reduction", kFp8AmaxReductionNames)
                  .json_at("schedule.precision.fp8_amax_reduction")
                  .json_only_when(fp8)
                  .in_json_always_present()
                  .stack_fact()
                  .only_when(fp8, "gemm = \"fp8\"", "is set but gemm is not \"fp8\"; set gemm = \"fp8\" or remove it")
                  .says("ranks the FP8 amaxes are all-reduced over (\"tp\" = --tp-only-amax-red)"));
}

void top_keys(std::vector<JobKey>& k) {
  k.push_back(
      member<J, &J::name>("name").must_be_given().in_json_always_present().says("the job's name (labels results)"));
  k.push_back(member<J, &J::cluster>("cluster").must_be_given().in_json_always_present().says(
      "cluster preset name, or cluster file relative to the job file's folder"));
  k.push_back(member<J, &J::software>("software")
                  .json_unless_default()
                  .says("software stack (a preset of presets/software/ or a file beside the job): its [schedule] and "
                        "[precision] facts are the defaults the job's keys override"));
  JobKey gpus;
  gpus.key = "gpus";
  gpus.type = KeyType::Integer;
  gpus.int_min = 1;
  gpus.by_hand = true;
  gpus.default_doc = "tp·cp·pp·dp";
  gpus.doc = "total GPUs; without parallel.dp, dp = gpus / (tp·cp·pp) (must divide exactly)";
  k.push_back(std::move(gpus));
}
} // namespace

const std::vector<JobKey>& job_keys() {
  static const std::vector<JobKey> keys = [] {
    std::vector<JobKey> k;
    top_keys(k);
    model_keys(k);
    moe_keys(k);
    parallel_keys(k);
    schedule_keys(k);
    overlap_and_operator_keys(k);
    return k;
  }();
  return keys;
}

const std::vector<KeySection>& job_sections() {
  static const std::vector<KeySection> sections = {
      {"", "", false, true, "The job: its name, the cluster and software it runs on."},
      {"model", "model", true, true, "The transformer."},
      {"parallel", "parallel", true, true, "How the model is split over the GPUs."},
      {"schedule", "schedule", false, true, "How an iteration is scheduled."},
      {"schedule.overlap", "schedule.overlap", false, true, "Communication overlapped with computation."},
      {"schedule.operators", "schedule.operators", false, true, "Kernel choices."},
      {"precision", "schedule.precision", false, false, "GEMM datatype."},
  };
  return sections;
}

const JobKey* find_job_key(std::string_view key) {
  for (const JobKey& f : job_keys())
    if (!f.key.empty() && f.key == key) return &f;
  return nullptr;
}

} // namespace twinscale::schedules
