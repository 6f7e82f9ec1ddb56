// The job description: model, parallelism, schedule options and the cluster it runs on.
// Plain structs. Each key of a job is described once in job_keys.cpp (reference: docs/keys.md).
#pragma once

#include <cstdint>
#include <string>

#include "common/enum_names.hpp"

namespace twinscale::schedules {

enum class BlockKind : uint8_t { Serial, Parallel };   // M1
enum class AttentionKind : uint8_t { Dense, Sliding }; // M2
// The names of each enum's values as job files, schedule JSON and study axes spell them.
inline constexpr EnumNames<BlockKind, 2> kBlockKindNames{
    {{"serial", BlockKind::Serial}, {"parallel", BlockKind::Parallel}}};
inline constexpr EnumNames<AttentionKind, 2> kAttentionKindNames{
    {{"dense", AttentionKind::Dense}, {"sliding", AttentionKind::Sliding}}};
/// M5. ZeroBubbleH1: Qi et al., ICLR'24 "Zero Bubble Pipeline Parallelism", the
/// handcrafted ZB-H1 order (1F1B with each backward split into B, the input gradient,
/// and W, the weight gradient; W passes deferred into the cool-down; pipeline.cpp).
enum class PipelineKind : uint8_t { OneFOneB, Interleaved, ZeroBubbleH1 };
inline constexpr EnumNames<PipelineKind, 3> kPipelineKindNames{{{"1f1b", PipelineKind::OneFOneB},
                                                                {"interleaved", PipelineKind::Interleaved},
                                                                {"zb-h1", PipelineKind::ZeroBubbleH1}}};
enum class OptimizerKind : uint8_t { Adam, Lamb }; // M3
inline constexpr EnumNames<OptimizerKind, 2> kOptimizerKindNames{
    {{"adam", OptimizerKind::Adam}, {"lamb", OptimizerKind::Lamb}}};
/// The MLP's activation: GeLU, SwiGLU (gated: FC1 makes gate and up), or squared ReLU,
/// relu(x)² (Primer; Nemotron-3 and Nemotron-4).
enum class MlpKind : uint8_t { Gelu, SwiGlu, SquaredRelu };
inline constexpr EnumNames<MlpKind, 3> kMlpKindNames{
    {{"gelu", MlpKind::Gelu}, {"swiglu", MlpKind::SwiGlu}, {"squared_relu", MlpKind::SquaredRelu}}};
enum class NormKind : uint8_t { LayerNorm, RmsNorm };
inline constexpr EnumNames<NormKind, 2> kNormKindNames{
    {{"layernorm", NormKind::LayerNorm}, {"rmsnorm", NormKind::RmsNorm}}};
/// How tokens are spread over experts (mixture of experts): evenly, or with expert
/// popularities drawn per (iteration, micro-batch, layer) from a seeded distribution.
enum class RoutingKind : uint8_t { Balanced, Dirichlet, Zipf };
inline constexpr EnumNames<RoutingKind, 3> kRoutingKindNames{
    {{"balanced", RoutingKind::Balanced}, {"dirichlet", RoutingKind::Dirichlet}, {"zipf", RoutingKind::Zipf}}};
/// How a MoE layer's dispatch and combine all-to-alls are run. Flat: one all-to-all over
/// the EP group. Hierarchical: Tutel's 2DH (arXiv 2206.03382) / DeepSpeed-MoE's
/// hierarchical all-to-all (arXiv 2201.05596): an all-to-all inside each NVLink
/// domain that groups the tokens by the destination's local index, then one among the
/// ranks of the same local index across domains (one rail); the combine mirrors it.
enum class EpAllToAll : uint8_t { Flat, Hierarchical };
inline constexpr EnumNames<EpAllToAll, 2> kEpAllToAllNames{
    {{"flat", EpAllToAll::Flat}, {"hierarchical", EpAllToAll::Hierarchical}}};
/// The fused-attention kernel a stack runs where schedule.operators.flash_attention is on:
/// FlashAttention-2 (Dao 2023), or cuDNN's fused attention (Transformer Engine's
/// FusedAttention, F16_arbitrary_seqlen), which Transformer Engine from 1.4 prefers on sm90
/// and later unless NVTE_FUSED_ATTN=0.
enum class AttentionBackend : uint8_t { FlashAttention2, Cudnn };
inline constexpr EnumNames<AttentionBackend, 2> kAttentionBackendNames{
    {{"flash-attn-2", AttentionBackend::FlashAttention2}, {"cudnn", AttentionBackend::Cudnn}}};
/// Datatype of the transformer layers' GEMMs. Fp8: Transformer Engine's delayed scaling
/// (per-tensor scales from an amax history; cast/transpose kernels; amax all-reduce).
enum class GemmPrecision : uint8_t { Bf16, Fp8 };
inline constexpr EnumNames<GemmPrecision, 2> kGemmPrecisionNames{
    {{"bf16", GemmPrecision::Bf16}, {"fp8", GemmPrecision::Fp8}}};
/// Ranks over which FP8 amaxes are all-reduced (Megatron-LM's get_amax_reduction_group):
/// the tensor- and data-parallel ranks of a pipeline stage (default), or TP only
/// (--tp-only-amax-red).
enum class Fp8AmaxReduction : uint8_t { TpDp, Tp };
inline constexpr EnumNames<Fp8AmaxReduction, 2> kFp8AmaxReductionNames{
    {{"tp-dp", Fp8AmaxReduction::TpDp}, {"tp", Fp8AmaxReduction::Tp}}};
/// Activation recomputation as job files name it (schedule.recompute): none, the attention
/// core only (ScheduleOptions::selective_recompute), every layer (ScheduleOptions::recompute)
/// or every layer under torchtitan's per-op policy (recompute_saves_alternate_matmuls too).
enum class RecomputeKind : uint8_t { None, Selective, Full, SelectiveOp };
inline constexpr EnumNames<RecomputeKind, 4> kRecomputeKindNames{{{"none", RecomputeKind::None},
                                                                  {"selective", RecomputeKind::Selective},
                                                                  {"selective-op", RecomputeKind::SelectiveOp},
                                                                  {"full", RecomputeKind::Full}}};
/// Datatype of the DP gradient reduction (schedule.grad_reduce_dtype), as
/// ScheduleOptions::grad_reduce_fp32.
inline constexpr EnumNames<bool, 2> kGradReduceDtypeNames{{{"bf16", false}, {"fp32", true}}};
/// The optimizer's master copy of each 16-bit weight: in fp32 (4 bytes), or only the low 16
/// bits of the fp32 value, whose high 16 bits are the bf16 weight itself (2 bytes: Apex
/// DistributedFusedAdam's store_param_remainders). ScheduleOptions::master_weights.
enum class MasterWeights : uint8_t { Fp32, Bf16Remainder };
inline constexpr EnumNames<MasterWeights, 2> kMasterWeightsNames{
    {{"fp32", MasterWeights::Fp32}, {"bf16_remainder", MasterWeights::Bf16Remainder}}};
/// How the stack's Adam step and gradient clipping run on the GPU (ScheduleOptions::
/// optimizer_kernels). Fused: one multi-tensor kernel for the step (Apex/Transformer
/// Engine FusedAdam, Megatron's and NeMo's optimizers: 28 bytes per element) and one read
/// of the gradients for their norm (Megatron's clip_grad_norm_fp32, which scales them only
/// when it clips). Foreach: torch.optim.AdamW(foreach=True) of PyTorch 2.x
/// (torch/optim/adamw.py _multi_tensor_adamw, capturable off): eight multi-tensor passes
/// over fp32 state (mul_ of the weights, lerp_ of m, mul_ and addcmul_ of v, sqrt of v into
/// a temporary, div_ and add_ of it, addcdiv_ into the weights: 80 bytes per element), and
/// torch.nn.utils.clip_grad_norm_(foreach=True), whose _foreach_mul_ of the gradients by
/// the clamped coefficient runs at every step ("avoids a `if clip_coef < 1:` conditional
/// which can require a CPU <=> device synchronization", torch/nn/utils/clip_grad.py).
enum class OptimizerKernels : uint8_t { Fused, Foreach };
inline constexpr EnumNames<OptimizerKernels, 2> kOptimizerKernelsNames{
    {{"fused", OptimizerKernels::Fused}, {"foreach", OptimizerKernels::Foreach}}};

struct ModelSpec {
  std::string name;
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t seq_len = 0;
  int64_t vocab = 0;
  int64_t ffn_hidden = 0; // 0 in a file means 4·hidden
  BlockKind block = BlockKind::Serial;
  AttentionKind attention = AttentionKind::Dense;
  int64_t window = 0;             // sliding-window width in tokens (Sliding only)
  int64_t kv_heads = 0;           // key/value heads (grouped-query attention); 0 = heads
  MlpKind mlp = MlpKind::Gelu;    // SwiGLU: FC1 produces gate and up (2·ffn_hidden)
  bool untied_embeddings = false; // LM head has its own weights (no embedding all-reduce)
  bool rotary = false;            // rotary position embedding (no learned seq_len × hidden table)
  // Dropout probability of the hidden states and attention probabilities (Megatron's
  // hidden_dropout / attention_dropout, 0.1 by default; Llama-family models train without
  // dropout). 0: no dropout kernel runs (PyTorch's dropout returns its input when p = 0).
  double dropout = 0.1;
  NormKind norm = NormKind::LayerNorm;
  // Mixture of experts (experts = 0: dense). A MoE layer replaces the MLP by a router,
  // `experts` expert MLPs of moe_ffn_hidden (each token goes to top_k of them) and
  // `shared_experts` MLPs every token goes through.
  int64_t experts = 0;
  int64_t top_k = 1;
  int64_t moe_ffn_hidden = 0; // 0 = ffn_hidden
  double capacity_factor = 0; // 0 = dropless; else an expert takes ≤ factor·(tokens·top_k/experts)
  int64_t shared_experts = 0; // each of moe_ffn_hidden
  int64_t moe_every = 1;      // MoE layers: layer ≥ first_dense_layers, (layer − first) % moe_every == 0
  int64_t first_dense_layers = 0;
  RoutingKind routing = RoutingKind::Balanced;
  double routing_alpha = 1.0;    // Dirichlet concentration (smaller: more skewed)
  double routing_exponent = 1.0; // Zipf exponent s (larger: more skewed)
  int64_t routing_seed = 1;      // ≥ 0
  /// Key/value heads in effect.
  int64_t kv() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t expert_ffn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn_hidden; }
  bool is_moe_layer(int64_t layer) const {
    return experts > 0 && layer >= first_dense_layers && (layer - first_dense_layers) % moe_every == 0;
  }
};

struct ParallelSpec {
  int64_t tp = 1;
  int64_t pp = 1;
  int64_t vpp = 1; // virtual stages (model chunks) per pipeline rank
  int64_t dp = 1;
  int64_t ep = 1; // expert parallel: experts sharded over blocks of ep data-parallel ranks
  EpAllToAll ep_a2a = EpAllToAll::Flat;
  int64_t ep_node = 0; // hierarchical: EP ranks per NVLink domain (divides ep); 0 with flat
  // Node-limited routing (DeepSeek-V3, arXiv 2412.19437 §2.1.2; DeepEP's dispatch): each
  // token goes to experts on at most this many NVLink domains and crosses the fabric once
  // per (token, domain), then fans out over NVLink; 0 = unlimited (hierarchical only).
  int64_t max_nodes_per_token = 0;
  /// EP ranks per NVLink domain as the layout groups them: ep_node when hierarchical, else
  /// ep (one domain: the second phase would be empty).
  int64_t ep_domain() const { return ep_a2a == EpAllToAll::Hierarchical ? ep_node : ep; }
  // MoE parallel folding (Megatron-Core's expert_tensor_parallel_size, arXiv 2504.14960):
  // 0 = unfolded (ep divides dp, experts whole on each TP rank); n ≥ 1 = the MoE layers
  // re-split each stage's tp·cp·dp ranks as etp × ep × expert-dp (layout.hpp). Only n = 1
  // (experts not split over TP) is modelled.
  int64_t etp = 0;
  /// Ranks holding the same experts (the expert gradients' reduction group).
  int64_t expert_dp() const { return etp > 0 ? tp * dp * cp / (etp * ep) : tp * (dp / ep); }
  // Context parallel (Megatron-Core / Transformer Engine cp_comm_type = "p2p", ring
  // attention): each sequence is split over cp ranks (2·cp chunks, rank i holding chunks i
  // and 2·cp−1−i so that causal work is balanced); attention exchanges K/V blocks around
  // the cp ring. Rank order tp-cp-dp-pp; the gradient reduction spans dp·cp.
  int64_t cp = 1;
  // Uneven pipeline (Megatron's decoder_first/last_pipeline_num_layers, vpp = 1): layers
  // of the first / last pipeline stage; 0 = an even split. The others share the rest.
  int64_t first_stage_layers = 0;
  int64_t last_stage_layers = 0;
  bool sequence_parallel = false;
  bool pp_scatter_gather = false; // SC'21: each pipeline send carries 1/tp of the activation,
                                  // all-gathered over the TP group on arrival (no SP)
  int64_t zero_stage = 0;         // 0 to 3 (MegaScale's DP overlap uses 2)
  int64_t micro_batch = 1;        // sequences per micro-batch
  int64_t global_batch = 1;       // sequences per iteration
  /// Micro-batches per pipeline per iteration: global_batch / (dp · micro_batch).
  int64_t micro_batches() const { return global_batch / (dp * micro_batch); }
  int64_t gpus() const { return tp * pp * dp * cp; }
  /// Ranks holding the same parameters (the data-parallel gradient group spans dp·cp).
  int64_t dp_cp() const { return dp * cp; }
};

struct OverlapSpec {
  bool dp = false;       // M4: prefetch all-gathers, early reduce-scatters, priorities
  bool pp = false;       // M5: decoupled, asynchronous send/recv
  bool tp = false;       // M6: TP communication chunked against GEMMs
  int64_t tp_chunks = 1; // chunks a TP GEMM + collective is split into (M6)
  // Transformer Engine's userbuffers (ub_tp_comm_overlap): the SMs each overlapped TP
  // communication takes from the GEMMs while it runs, by TE's names for them (a ub_cfg's
  // num_sm; 0 for method ring_exchange, which copies with the copy engines); −1: the
  // channels asked for (SimOptions::channels). kTeUbRoles lists the op each names.
  int64_t tp_sms_qkv_fprop = -1, tp_sms_proj_fprop = -1, tp_sms_fc1_fprop = -1, tp_sms_fc2_fprop = -1;
  int64_t tp_sms_qkv_dgrad = -1, tp_sms_qkv_wgrad = -1, tp_sms_fc1_dgrad = -1, tp_sms_fc1_wgrad = -1;
  int64_t tp_sms_proj_dgrad = -1, tp_sms_fc2_dgrad = -1;
};

/// A Transformer Engine userbuffers role (its ub_cfg name), the TP collective of the
/// lowering it is (schedules/detail/layer_ops.cpp names them) and its OverlapSpec field.
struct TeUbRole {
  const char* te_name;
  const char* op_name;
  int64_t OverlapSpec::*sms;
};
inline constexpr TeUbRole kTeUbRoles[] = {
    {"qkv_fprop", "attn.qkv.ag", &OverlapSpec::tp_sms_qkv_fprop},          // all-gather before the QKV GEMM
    {"proj_fprop", "attn.proj.rs", &OverlapSpec::tp_sms_proj_fprop},       // reduce-scatter after the projection
    {"fc1_fprop", "mlp.fc1.ag", &OverlapSpec::tp_sms_fc1_fprop},           // all-gather before FC1
    {"fc2_fprop", "mlp.fc2.rs", &OverlapSpec::tp_sms_fc2_fprop},           // reduce-scatter after FC2
    {"qkv_dgrad", "attn.qkv.wgrad.ag", &OverlapSpec::tp_sms_qkv_dgrad},    // input re-gathered beside QKV's dgrad
    {"qkv_wgrad", "attn.qkv.dgrad.rs", &OverlapSpec::tp_sms_qkv_wgrad},    // QKV's dgrad scattered beside its wgrad
    {"fc1_dgrad", "mlp.fc1.wgrad.ag", &OverlapSpec::tp_sms_fc1_dgrad},     // input re-gathered beside FC1's dgrad
    {"fc1_wgrad", "mlp.fc1.dgrad.rs", &OverlapSpec::tp_sms_fc1_wgrad},     // FC1's dgrad scattered beside its wgrad
    {"proj_dgrad", "attn.proj.dgrad.ag", &OverlapSpec::tp_sms_proj_dgrad}, // output gradient gathered before
    {"fc2_dgrad", "mlp.fc2.dgrad.ag", &OverlapSpec::tp_sms_fc2_dgrad},     // output gradient gathered before
};

struct OperatorSpec { // M7
  bool flash_attention = false;
  // which fused-attention kernel flash_attention runs (AttentionBackend)
  AttentionBackend attention_backend = AttentionBackend::FlashAttention2;
  bool fused_layernorm = false;
  bool fused_gelu = false; // fused bias+GeLU, or one SwiGLU kernel (silu(gate)·up)
  // Rotary embedding (model.rotary) of the queries and keys in one fused kernel
  // (Transformer Engine's fused RoPE, Megatron's apply_rope_fusion); false: the eager
  // complex-number form in fp32 (torchtitan's apply_rotary_emb).
  bool fused_rope = true;
  // One GEMM for the query, key and value projections (Megatron's linear_qkv) and one for
  // SwiGLU's gate and up projections (linear_fc1); false: separate wq/wk/wv and w1/w3
  // GEMMs (torchtitan's Llama).
  bool fused_qkv = true;
};

struct ScheduleOptions {
  PipelineKind pipeline = PipelineKind::OneFOneB;
  OverlapSpec overlap;
  OptimizerKind optimizer = OptimizerKind::Adam;
  OptimizerKernels optimizer_kernels = OptimizerKernels::Fused; // kOptimizerKernelsNames
  bool recompute = false;                                       // full activation recomputation in backward
  int64_t recompute_every = 1; // full recomputation of every n-th layer only (layer % n == 0:
                               // torchtitan's selective "layer" AC, ac_freq = n)
  // With recompute: torchtitan's per-op selective checkpointing (selective_ac_option =
  // "op", parallelisms/parallelize_llama.py): the recomputation keeps what the forward
  // saved — the attention kernel's output and the 1st, 3rd, 5th … matmul's of each layer —
  // and re-runs every other op (norms, activations, RoPE, the 2nd, 4th … matmul).
  bool recompute_saves_alternate_matmuls = false;
  bool selective_recompute = false; // only the attention core (QKᵀ, softmax, dropout, ·V) is
                                    // recomputed in backward (Korthikanti et al. 2022, §4)
  bool grad_reduce_fp32 = false;    // DP gradients reduced in fp32 (Megatron's default with
                                    // bf16 mixed precision): twice the bytes of bf16
  // the optimizer state's master weights (kMasterWeightsNames)
  MasterWeights master_weights = MasterWeights::Fp32;
  // Megatron-LM's --gradient-accumulation-fusion: the weight-gradient GEMM accumulates
  // into the main-gradient buffer. false (Megatron-LM of SC'21): the GEMM writes a 16-bit
  // gradient and a separate kernel adds it into the buffer, per weight and micro-batch.
  bool grad_accumulation_fusion = true;
  // Megatron-LM's --async-tensor-model-parallel-allreduce: the backward's TP collective of
  // the input gradient runs while the weight-gradient GEMM computes. false (SC'21): it
  // follows both GEMMs and the computation waits for it.
  bool tp_async_allreduce = true;
  OperatorSpec operators;
  bool async_data_loading = false; // M8
  int64_t iterations = 1;          // iterations lowered back to back
  // Host time of one framework module call (a software-stack fact: the Python of one GEMM
  // layer's forward or backward with its casts and FP8 scaling bookkeeping, or of one
  // attention's forward or backward): the host issues a rank's ops in program order, and
  // a GPU op cannot start before the host has reached it, so when a micro-batch pass of a
  // layer takes less GPU time than its module calls take on the host, the GPU waits (the
  // CPU-bound regime of small models on fast GPUs). 0 = the host is never the bottleneck.
  double host_seconds_per_module = 0;
  // The same with FP8 GEMMs (Transformer Engine's casts and amax/scale bookkeeping take
  // more host time per call); 0 = host_seconds_per_module.
  double host_seconds_per_fp8_module = 0;
  /// The host time of one module call in effect for this job's precision.
  double host_seconds_per_call() const {
    return fp8() && host_seconds_per_fp8_module > 0 ? host_seconds_per_fp8_module : host_seconds_per_module;
  }
  int64_t fsdp_prefetch = 1; // ZeRO-3: layers whose all-gather runs ahead of the one computing
  // ZeRO-3 with per-parameter sharding (PyTorch FSDP2): each all-gather's flat output is
  // copied out into the parameters' own tensors on the compute stream (split_with_sizes_copy
  // in foreach_all_gather_copy_out: read and write the gathered bytes). false: the gathered
  // buffer is used in place (FSDP1's flat parameter views, DeepSpeed's partitioned views).
  bool fsdp_copy_out = false;
  // ZeRO-3 with per-parameter sharding (PyTorch FSDP2): after a layer's backward its
  // gradients are concatenated into the reduce-scatter's flat input in the reduce dtype
  // (foreach_reduce_scatter_copy_in: one torch.cat reading the 16-bit gradients and writing
  // the reduce dtype), and the compute stream waits for that copy before the next layer's
  // backward (current_stream.wait_stream(reduce_scatter_stream), which frees the gradients).
  // false: the reduction reads the gradients in place.
  bool fsdp_grad_copy_in = false;
  // ZeRO-3 as FSDP2 of early 2024: before the copy-in's event is recorded, the flat
  // reduce-scatter input is divided in place by the pre-divide factor (about sqrt(DP size),
  // for every reduce dtype: FSDPParamGroup._init_grad_divide_factors, foreach_reduce_scatter's
  // _div_if_needed), so the compute stream also waits for one pass reading and writing the
  // reduce input (the flat copy; without fsdp_grad_copy_in, the 16-bit gradients in place).
  // false: no pre-divide (later FSDP2 lets NCCL average fp32/bf16 reductions).
  bool fsdp_grad_predivide = false;
  // DP gradient buckets (PyTorch DDP's bucket_cap_mb, Megatron-Core's ddp bucket_size):
  // with overlap.dp, a model chunk's gradients are reduced in buckets of about this many
  // parameters, each launched once its last gradient is final during the chunk's last
  // backward (buckets fill in backward order, layer by layer). 0: one reduction per chunk.
  int64_t dp_bucket_params = 0;
  GemmPrecision gemm_precision = GemmPrecision::Bf16; // job file [precision] gemm
  Fp8AmaxReduction fp8_amax_reduction = Fp8AmaxReduction::TpDp;
  bool fp8() const { return gemm_precision == GemmPrecision::Fp8; }
};

struct JobSpec {
  std::string name;
  ModelSpec model;
  ParallelSpec parallel;
  ScheduleOptions options;
  std::string cluster;  // cluster preset name or path to a cluster file
  std::string software; // software stack (presets/software/) whose facts the options start from; "" = none
};

} // namespace twinscale::schedules
