#include "schedules/check_job.hpp"

#include <algorithm>
#include <string>

#include "schedules/error.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {

namespace {
std::string str(int64_t v) { return std::to_string(v); }

void require(bool ok, const std::string& message) {
  if (!ok) throw JobError(message);
}

/// parallel.first_stage_layers / last_stage_layers: the rest split evenly in between.
void check_uneven_stages(const JobSpec& job, const std::string& who) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const int64_t head = p.first_stage_layers, tail = p.last_stage_layers;
  require(head >= 0 && tail >= 0 && head < m.layers && tail < m.layers,
          who + "parallel.first_stage_layers = " + str(head) + " and last_stage_layers = " + str(tail) +
              " must be in [0, layers = " + str(m.layers) + ")");
  const int64_t stages = saturating_mul(p.pp, p.vpp);
  require(stages >= 2, who + "parallel.first_stage_layers / last_stage_layers need pp·vpp ≥ 2 virtual stages");
  const int64_t middle = stages - (head > 0 ? 1 : 0) - (tail > 0 ? 1 : 0);
  const int64_t rest = m.layers - head - tail;
  require(middle == 0 ? rest == 0 : (rest >= middle && rest % middle == 0),
          who + "model.layers − first_stage_layers − last_stage_layers = " + str(m.layers) + " − " + str(head) + " − " +
              str(tail) + " = " + str(rest) + " must split evenly over the other " + str(middle) +
              " virtual pipeline stages (at least one layer each)");
}

/// Context parallelism and ZB-H1.
void check_cp_and_zero_bubble(const JobSpec& job, const std::string& who) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const ScheduleOptions& o = job.options;
  require(p.cp >= 1 && p.cp <= 1024, who + "parallel.cp = " + str(p.cp) + "; valid: 1 to 1024");
  if (p.cp > 1) {
    require(m.seq_len % (2 * p.cp) == 0, who + "model.seq_len = " + str(m.seq_len) +
                                             " is not divisible by 2·parallel.cp = " + str(2 * p.cp) +
                                             " (the sequence is cut into 2·cp chunks for causal load balance)");
    require(m.attention == AttentionKind::Dense,
            who + "parallel.cp = " + str(p.cp) +
                " needs model.attention = \"dense\" (ring attention over a sliding "
                "window is not modelled)");
    require(m.experts == 0, who + "parallel.cp = " + str(p.cp) +
                                " with model.experts > 0 is not modelled (expert parallelism spans dp only); "
                                "use cp = 1 or a dense model");
    const int64_t local = p.micro_batch * (m.seq_len / p.cp);
    require(!(p.sequence_parallel && p.tp > 1) || local % p.tp == 0,
            who + "parallel.sequence_parallel needs micro_batch·seq_len/cp = " + str(local) +
                " divisible by tp = " + str(p.tp));
    require(o.overlap.tp_chunks == 1 || local % o.overlap.tp_chunks == 0,
            who + "schedule.overlap.tp_chunks = " + str(o.overlap.tp_chunks) +
                " must divide micro_batch·seq_len/cp = " + str(local));
  }
  if (o.pipeline == PipelineKind::ZeroBubbleH1) {
    require(p.vpp == 1, who + "schedule.pipeline = \"zb-h1\" needs parallel.vpp = 1 (got " + str(p.vpp) + ")");
    require(m.experts == 0, who + "schedule.pipeline = \"zb-h1\" with model.experts > 0 is not modelled (the "
                                  "experts' weight gradients are not split out); use \"1f1b\"");
    require(p.zero_stage <= 2, who + "schedule.pipeline = \"zb-h1\" with parallel.zero_stage = 3 is not modelled "
                                     "(per-layer gradient reduce-scatters would precede the W pass); use 0 to 2");
  }
}

/// Expert parallelism's size against the ranks it is carved from: a block of dp ranks
/// (unfolded), or, folded, etp·ep dividing a pipeline stage's tp·cp·dp ranks.
void check_expert_folding(const ParallelSpec& p, const std::string& who) {
  if (p.etp == 0) {
    require(p.ep >= 1 && p.ep <= p.dp && p.dp % p.ep == 0,
            who + "parallel.ep = " + str(p.ep) + " must divide parallel.dp = " + str(p.dp) +
                " (experts are sharded over blocks of ep DP ranks); to fold expert parallelism over "
                "tp·cp·dp instead, set parallel.etp = 1 (MoE parallel folding)");
    return;
  }
  require(p.etp == 1, who + "parallel.etp = " + str(p.etp) +
                          ": experts split over an expert-tensor-parallel group are not modelled; valid: 1 "
                          "(folded, experts whole on each rank) or absent (unfolded)");
  const int64_t stage = p.tp * p.cp * p.dp;
  require(p.ep >= 1 && stage % (p.ep * p.etp) == 0,
          who + "parallel.ep · parallel.etp = " + str(p.ep) + " · " + str(p.etp) +
              " must divide parallel.tp · parallel.cp · parallel.dp = " + str(p.tp) + " · " + str(p.cp) + " · " +
              str(p.dp) + " = " + str(stage) + " (the ranks of one pipeline stage that MoE folding re-splits)");
  require(p.zero_stage <= 2, who + "parallel.etp with parallel.zero_stage = 3 is not modelled (the fully sharded "
                                   "experts' gathers follow the unfolded layout); use zero_stage 0 to 2");
}

/// Mixture of experts and expert parallelism.
void check_moe(const JobSpec& job, const std::string& who) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  check_expert_folding(p, who);
  require(m.experts >= 0 && m.experts <= 4096,
          who + "model.experts = " + str(m.experts) + "; valid: 0 (dense) to 4096 (DeepSeek-V3 has 256)");
  if (p.ep_a2a == EpAllToAll::Hierarchical) {
    require(p.ep_node >= 1 && p.ep_node <= p.ep && p.ep % p.ep_node == 0,
            who + "parallel.ep_node = " + str(p.ep_node) + " must divide parallel.ep = " + str(p.ep) +
                " (the EP ranks of one NVLink domain in the hierarchical all-to-all: gpus per server / tp, "
                "at most ep)");
    require(p.max_nodes_per_token >= 0 && p.max_nodes_per_token <= p.ep / p.ep_node,
            who + "parallel.max_nodes_per_token = " + str(p.max_nodes_per_token) + "; valid: 0 (no node limit) to " +
                "ep / ep_node = " + str(p.ep / p.ep_node) + " NVLink domains");
  } else {
    require(p.ep_node == 0, who + "parallel.ep_node = " + str(p.ep_node) +
                                " is set but parallel.ep_a2a is \"flat\"; set ep_a2a = \"hierarchical\" or remove it");
    require(p.max_nodes_per_token == 0, who + "parallel.max_nodes_per_token = " + str(p.max_nodes_per_token) +
                                            " needs parallel.ep_a2a = \"hierarchical\" (the NVLink domains)");
  }
  if (m.experts == 0) {
    require(p.ep == 1, who + "parallel.ep = " + str(p.ep) + " > 1 needs model.experts > 0");
    require(p.etp == 0, who + "parallel.etp = " + str(p.etp) + " needs model.experts > 0");
    require(p.ep_a2a == EpAllToAll::Flat,
            who + "parallel.ep_a2a = \"hierarchical\" needs model.experts > 0 (a dense model has no all-to-all)");
    return;
  }
  require(m.top_k >= 1 && m.top_k <= m.experts,
          who + "model.top_k = " + str(m.top_k) + "; valid: 1 to experts = " + str(m.experts));
  require(m.experts % p.ep == 0, who + "model.experts = " + str(m.experts) + " is not divisible by parallel.ep = " +
                                     str(p.ep) + " (each EP rank holds experts/ep whole experts)");
  require(m.moe_ffn_hidden >= 0 && m.moe_ffn_hidden <= kMaxFfnHidden,
          who + "model.moe_ffn_hidden = " + str(m.moe_ffn_hidden) + "; valid: 0 (= ffn_hidden) to 2^22");
  require(m.shared_experts >= 0 && m.shared_experts <= 64,
          who + "model.shared_experts = " + str(m.shared_experts) + "; valid: 0 to 64");
  require(m.moe_every >= 1 && m.first_dense_layers >= 0 && m.first_dense_layers < m.layers,
          who + "model.moe_every = " + str(m.moe_every) + " must be ≥ 1 and first_dense_layers = " +
              str(m.first_dense_layers) + " below layers = " + str(m.layers));
  require((m.shared_experts * m.expert_ffn()) % p.tp == 0,
          who + "model.shared_experts·moe_ffn_hidden = " + str(m.shared_experts * m.expert_ffn()) +
              " is not divisible by parallel.tp = " + str(p.tp) + " (shared experts are split over TP)");
  require(m.capacity_factor == 0 || (m.capacity_factor >= 1 && m.capacity_factor <= 1e6),
          who + "model.capacity_factor must be 0 (dropless) or in [1, 1e6]");
  require(m.routing_alpha > 0 && m.routing_alpha <= 1e6 && m.routing_exponent > 0 && m.routing_exponent <= 100 &&
              m.routing_seed >= 0,
          who + "model.routing_alpha must be in (0, 1e6], routing_exponent in (0, 100], routing_seed ≥ 0");
  require(p.tp == 1 || p.sequence_parallel,
          who + "model.experts > 0 with parallel.tp = " + str(p.tp) +
              " needs parallel.sequence_parallel = true (as Megatron-LM: each TP rank routes its own "
              "1/tp of the tokens to experts that are not split over TP)");
  require(m.block == BlockKind::Serial,
          who + "model.experts > 0 needs model.block = \"serial\" (the parallel block is not modelled with experts)");
}
} // namespace

void check_job(const JobSpec& job) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const ScheduleOptions& o = job.options;
  const std::string who = "job '" + job.name + "': ";

  require(m.layers >= 1 && m.hidden >= 1 && m.heads >= 1 && m.seq_len >= 1 && m.vocab >= 1 && m.ffn_hidden >= 1,
          who + "model.layers, hidden, heads, seq_len, vocab and ffn_hidden must all be ≥ 1");
  require(p.tp >= 1 && p.pp >= 1 && p.vpp >= 1 && p.dp >= 1 && p.micro_batch >= 1 && p.global_batch >= 1,
          who + "parallel.tp, pp, vpp, dp, micro_batch and global_batch must all be ≥ 1");
  // Upper bounds first, so that no product below can overflow (limits.hpp has the reasons).
  auto at_most = [&](const char* key, int64_t v, int64_t max, const char* reason) {
    try {
      require_at_most(key, v, max, reason);
    } catch (const JobError& e) {
      throw JobError(who + e.what());
    }
  };
  at_most("model.layers", m.layers, kMaxLayers, "the largest published dense models have ≤ 200 layers");
  at_most("model.hidden", m.hidden, kMaxHidden, "2^20; GPT-530B has 20,480");
  at_most("model.heads", m.heads, kMaxHidden, "2^20");
  at_most("model.ffn_hidden", m.ffn_hidden, kMaxFfnHidden, "2^22 = 4·2^20");
  at_most("model.seq_len", m.seq_len, kMaxSeqLen, "2^24 tokens");
  at_most("model.vocab", m.vocab, kMaxVocab, "2^24 tokens");
  at_most("model.window", m.window, kMaxSeqLen, "2^24 tokens");
  at_most("parallel.vpp", p.vpp, kMaxLayers, "at most one layer per virtual stage");
  at_most("parallel.micro_batch", p.micro_batch, kMaxMicroBatch, "2^20 sequences");
  at_most("parallel.global_batch", p.global_batch, kMaxGlobalBatch, "2^24 sequences");
  at_most("schedule.iterations", o.iterations, 1000, "iterations are lowered back to back");
  try {
    check_layout_sizes(p.tp, saturating_mul(p.dp, std::max<int64_t>(p.cp, 1)), p.pp, "parallel");
  } catch (const JobError& e) {
    throw JobError(who + e.what());
  }
  const int64_t tokens = p.micro_batch * m.seq_len; // ≤ 2^44 after the bounds above
  at_most("parallel.micro_batch·model.seq_len", tokens, kMaxMicroBatchTokens,
          "tokens of one micro-batch; GEMM dimensions are 32-bit in cuBLAS");
  require(m.hidden % m.heads == 0,
          who + "model.hidden = " + str(m.hidden) + " is not divisible by model.heads = " + str(m.heads));
  require(m.heads % p.tp == 0, who + "model.heads = " + str(m.heads) + " is not divisible by parallel.tp = " +
                                   str(p.tp) + " (each TP rank holds whole heads)");
  require(m.ffn_hidden % p.tp == 0,
          who + "model.ffn_hidden = " + str(m.ffn_hidden) + " is not divisible by parallel.tp = " + str(p.tp));
  require(m.vocab % p.tp == 0, who + "model.vocab = " + str(m.vocab) + " is not divisible by parallel.tp = " +
                                   str(p.tp) + " (vocabulary-parallel embedding)");
  if (p.first_stage_layers == 0 && p.last_stage_layers == 0)
    require(m.layers % saturating_mul(p.pp, p.vpp) == 0,
            who + "model.layers = " + str(m.layers) + " is not divisible by parallel.pp·vpp = " + str(p.pp) + "·" +
                str(p.vpp) + " = " + str(saturating_mul(p.pp, p.vpp)) +
                " (every virtual stage needs the same number of layers; or set parallel.first_stage_layers / "
                "last_stage_layers)");
  else
    check_uneven_stages(job, who);
  require(p.global_batch % (p.dp * p.micro_batch) == 0,
          who + "parallel.global_batch = " + str(p.global_batch) + " is not divisible by parallel.dp·micro_batch = " +
              str(p.dp) + "·" + str(p.micro_batch) + " = " + str(p.dp * p.micro_batch));
  require(p.zero_stage >= 0 && p.zero_stage <= 3,
          who + "parallel.zero_stage = " + str(p.zero_stage) + "; valid: 0, 1, 2, 3");
  if (o.pipeline == PipelineKind::Interleaved) {
    require(p.pp > 1, who + "schedule.pipeline = \"interleaved\" needs parallel.pp > 1 (pp = 1)");
    require(p.micro_batches() % p.pp == 0, who +
                                               "schedule.pipeline = \"interleaved\" needs micro-batches % pp == 0 "
                                               "(Megatron's rule); micro-batches = global_batch/(dp·micro_batch) = " +
                                               str(p.micro_batches()) + ", pp = " + str(p.pp));
  } else {
    require(p.vpp == 1, who + "parallel.vpp = " + str(p.vpp) + " > 1 needs schedule.pipeline = \"interleaved\"");
  }
  if (m.attention == AttentionKind::Sliding)
    require(m.window > 0 && m.window <= m.seq_len,
            who + "model.attention = \"sliding\" needs 0 < model.window ≤ seq_len = " + str(m.seq_len) +
                "; window = " + str(m.window));
  require(o.overlap.tp_chunks >= 1 && o.overlap.tp_chunks <= 64,
          who + "schedule.overlap.tp_chunks = " + str(o.overlap.tp_chunks) + "; valid: 1 to 64");
  require(o.overlap.tp_chunks == 1 || tokens % o.overlap.tp_chunks == 0,
          who + "schedule.overlap.tp_chunks = " + str(o.overlap.tp_chunks) +
              " must divide micro_batch·seq_len = " + str(tokens));
  require(!p.sequence_parallel || tokens % p.tp == 0,
          who + "parallel.sequence_parallel needs micro_batch·seq_len divisible by tp");
  require(o.iterations >= 1, who + "schedule.iterations must be ≥ 1");
  require(o.recompute_every >= 1 && o.recompute_every <= kMaxLayers,
          who + "schedule.recompute_every = " + str(o.recompute_every) + "; valid: 1 to " + str(kMaxLayers));
  require(!o.recompute_saves_alternate_matmuls ||
              (o.recompute && o.recompute_every == 1 && p.tp == 1 && p.cp == 1 && !o.fp8() && m.experts == 0 &&
               m.block == BlockKind::Serial && o.pipeline != PipelineKind::ZeroBubbleH1),
          who + "schedule.recompute = \"selective-op\" (torchtitan's per-op checkpointing) is modelled for every "
                "layer with tp = 1, cp = 1, BF16 GEMMs, dense MLPs, a serial block and a pipeline other than zb-h1 "
                "(the runs it describes); use recompute = \"full\" or \"selective\" otherwise");
  require(o.optimizer_kernels == OptimizerKernels::Fused || o.optimizer == OptimizerKind::Adam,
          who + "schedule.optimizer_kernels = \"foreach\" (PyTorch's AdamW(foreach=True)) needs schedule.optimizer = "
                "\"adam\"; LAMB runs as fused kernels (optimizer_kernels = \"fused\")");
  require(o.dp_bucket_params >= 0 && o.dp_bucket_params <= kMaxDpBucketParams,
          who + "schedule.dp_bucket_params = " + str(o.dp_bucket_params) + "; valid: 0 (one reduction per chunk) to " +
              str(kMaxDpBucketParams));
  for (const TeUbRole& role : kTeUbRoles)
    require(o.overlap.*role.sms >= -1 && o.overlap.*role.sms <= 255,
            who + "schedule.overlap.tp_sms_" + role.te_name + " = " + str(o.overlap.*role.sms) +
                "; valid: -1 (the channels asked for) or 0 to 255 SMs");
  require(o.fsdp_prefetch >= 0 && o.fsdp_prefetch <= 8,
          who + "schedule.fsdp_prefetch = " + str(o.fsdp_prefetch) + "; valid: 0 to 8 layers");
  require(m.kv() >= 1 && m.heads % m.kv() == 0 && m.kv() % p.tp == 0, who + "model.kv_heads = " + str(m.kv()) +
                                                                          " must divide heads = " + str(m.heads) +
                                                                          " and be a multiple of tp = " + str(p.tp));
  require(o.operators.fused_qkv || (o.pipeline != PipelineKind::ZeroBubbleH1 && m.block == BlockKind::Serial),
          who + "schedule.operators.fused_qkv = false (separate wq/wk/wv and w1/w3 GEMMs, torchtitan's Llama) "
                "is modelled with a serial block and a pipeline other than zb-h1 (MegaScale's parallel block and "
                "ZB-H1's deferred weight gradients use the fused projections)");
  require(o.host_seconds_per_fp8_module >= 0 && o.host_seconds_per_fp8_module <= 1e-2,
          who + "schedule.host_seconds_per_fp8_module = " + std::to_string(o.host_seconds_per_fp8_module) +
              "; valid: 0 to 0.01 s (a framework's host time per module call with FP8 GEMMs)");
  require(o.host_seconds_per_module >= 0 && o.host_seconds_per_module <= 1e-2,
          who + "schedule.host_seconds_per_module = " + std::to_string(o.host_seconds_per_module) +
              "; valid: 0 to 0.01 s (a framework's host time per module call)");
  require(m.dropout >= 0 && m.dropout < 1, who + "model.dropout = " + std::to_string(m.dropout) + "; valid: 0 to < 1");
  check_moe(job, who);
  check_cp_and_zero_bubble(job, who);
  require(!p.pp_scatter_gather || (p.tp > 1 && p.pp > 1 && !p.sequence_parallel),
          who +
              "parallel.pp_scatter_gather splits pipeline sends over the TP group: it needs tp > 1 "
              "and pp > 1 and sequence_parallel = false (with it the activation is already split); "
              "got tp = " +
              str(p.tp) + ", pp = " + str(p.pp) + ", sequence_parallel = " + (p.sequence_parallel ? "true" : "false"));
}

} // namespace twinscale::schedules
