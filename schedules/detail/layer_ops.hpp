// Private: the ops of one transformer layer (forward, backward), of the embedding and of
// the LM head + loss, for one micro-batch on one rank.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "schedules/detail/builder.hpp"

namespace twinscale::schedules::detail {

class LayerEmitter {
public:
  LayerEmitter(ProgramBuilder& builder, const JobSpec& job);

  /// This program's rank in the context-parallel ring (its ring neighbours' group ranks).
  void set_cp_rank(int64_t cp_rank);
  /// ZB-H1 (zero_bubble.cpp): backward passes leave out the weight-gradient GEMMs (and
  /// their inputs' TP all-gathers), which the W pass emits later.
  void set_split_backward(bool split) { defer_wgrad_ = split; }
  void layer_weight_gradients(); // the W pass of one layer (labels set by the caller)
  void head_weight_gradients();  // the W pass of the LM head
  void layer_forward();          // labels (layer, phase, …) are set by the caller on the builder
  void layer_backward();
  /// Whether a layer pass that would emit the same ops as one emitted before, from the
  /// same builder state, is copied from it (ProgramBuilder::replay) rather than emitted
  /// again: on by default; the program is the same either way (tests/schedules compare).
  void set_replay(bool on) {
    replay_ = on;
    templates_.clear();
  }
  size_t replayed_passes() const { return replayed_; } // layer passes copied so far
  void embedding_forward();
  void embedding_backward();
  void head_forward(); // final LayerNorm, LM head (tied embedding), vocab-parallel loss
  void head_backward();
  /// FP8 (fp8.cpp): after the forward or backward pass of a chunk's `layers` for one
  /// micro-batch, the amax all-reduce over the amax reduction group and the scale update
  /// (Transformer Engine, at the exit of the fp8_autocast region). No-op without FP8.
  void fp8_amax_update(bool forward, int64_t first_layer, int64_t layers);

private:
  // Layer passes (layer_forward, layer_backward) recorded for replay. What a dense layer's
  // pass emits depends on the builder's state, on whether it is a forward or a backward
  // pass, on the phase it starts in (recomputation), on ZB-H1's split backward and, with
  // FP8, on whether it casts the weights (first micro-batch); a MoE layer's also on its
  // layer, micro-batch and iteration (routing), so MoE layers are always emitted.
  struct LayerTemplate {
    bool forward = true;
    Phase phase = Phase::Forward;
    bool defer_wgrad = false;
    bool fp8_weights = false;
    ProgramBuilder::Span span;
    int64_t matmuls = 0; // forward: forward_matmuls_ after the pass; backward: added by it
    bool same_pass(const LayerTemplate& o) const {
      return forward == o.forward && phase == o.phase && defer_wgrad == o.defer_wgrad && fp8_weights == o.fp8_weights;
    }
  };
  static constexpr size_t kTemplates = 8; // the pass kinds × the states they start from
  bool replay_ = true;
  std::vector<LayerTemplate> templates_;
  size_t next_template_ = 0; // replaced next once kTemplates are held
  size_t replayed_ = 0;
  void layer_pass(bool forward);
  void layer_forward_ops();
  void layer_backward_ops();

  uint32_t gemm(const std::string& name, int64_t m, int64_t n, int64_t k, std::initializer_list<uint32_t> deps = {},
                int64_t chunks = 1);
  /// Weight-gradient GEMM accumulating into the fp32 main-gradient buffer.
  uint32_t wgrad(const std::string& name, int64_t m, int64_t n, int64_t k, std::initializer_list<uint32_t> deps = {});
  /// GEMM followed by a TP collective on its output (split into tp_chunks pipelined
  /// pieces when TP overlap is on). Returns the collective ops (empty when tp = 1).
  std::vector<uint32_t> gemm_then_collective(const std::string& name, int64_t m, int64_t n, int64_t k,
                                             OpKind collective, double bytes);
  /// TP collective (all-gather) on the GEMM's input, then the GEMM (chunked likewise).
  /// tp_async_allreduce = false: the next compute op waits for `collectives`.
  void unless_async(const std::vector<uint32_t>& collectives);
  void collective_then_gemm(OpKind collective, double bytes, const std::string& name, int64_t m, int64_t n, int64_t k);
  uint32_t tp_collective(OpKind kind, const std::string& name, double bytes, std::initializer_list<uint32_t> deps,
                         DType dtype = DType::BF16);

  void layernorm(const std::string& name, bool backward); // LayerNorm or RMSNorm (model.norm)
  void rmsnorm(const std::string& name, bool backward);
  void gelu(bool backward);
  /// The activation of `elements` MLP outputs (GeLU forms, SwiGLU or squared ReLU) named prefix.*.
  void activation(const std::string& prefix, int64_t elements, bool backward);

  // FP8 GEMMs (fp8.cpp)
  bool fp8_gemm(const std::string& name) const; // this GEMM runs in FP8
  DType gemm_dtype(const std::string& name) const { return fp8_gemm(name) ? DType::FP8 : DType::BF16; }
  double gemm_input_bytes(const std::string& name) const { return fp8_gemm(name) ? 1.0 : 2.0; }
  /// Casts ahead of FP8 GEMM `name` computing on rows×k activations and k×n weights
  /// (`weights` copies: local experts): the weight's cast + transpose on the first
  /// micro-batch (forward GEMMs), the input's cast (+ transpose unless `gathered`: then
  /// rows are the local shard before the sequence-parallel all-gather).
  void fp8_input(const std::string& name, int64_t rows, int64_t k, int64_t n, int64_t weights, bool gathered);
  /// FP8 only: this micro-batch casts the weights (the first of an iteration, or every
  /// one with ZeRO-3, whose gathered weights are new each time).
  bool casts_weights() const;
  void fp8_cast(const std::string& name, int64_t elements, double bytes_per_element,
                std::initializer_list<uint32_t> deps = {});
  /// Transformer Engine GEMM modules (each with its FP8 scaling state) of `layer`.
  int64_t fp8_modules(int64_t layer) const;
  /// All-gathers of an FP8 GEMM's input move FP8 (half the bytes of BF16).
  double gather_scale(const std::string& name) const { return fp8_gemm(name) ? 0.5 : 1.0; }

  // mixture of experts (moe_layer.cpp): replaces the MLP branch of a MoE layer
  bool moe_layer() const; // the layer in b_.labels is a MoE layer
  void moe_forward();
  void moe_backward();
  double moe_load() const; // busiest EP rank's routed tokens / balanced (moe_routing.hpp)
  uint32_t expert_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, bool wgrad);
  /// The dispatch or combine all-to-all of `bytes` per rank after the last compute op,
  /// flat or hierarchical (two phases; `combine`: the rail phase first). Returns the last
  /// collective; the next compute op waits for it unless `overlapped` (the caller waits).
  uint32_t ep_all_to_all(const std::string& name, double bytes, bool combine, bool overlapped = false);
  void shared_experts(bool backward);
  void dropout(const std::string& name, bool backward);
  /// Rotary embedding of this layer's queries and keys (model.rotary; fused or eager fp32).
  void rope(bool backward);
  /// QKV (forward), or torchtitan's separate wq/wk/wv GEMMs (operators.fused_qkv = false).
  void qkv_forward(double act_bytes);
  /// FC1 (forward), or SwiGLU's separate w1/w3 GEMMs.
  void fc1_forward(double act_bytes);
  /// A column-parallel GEMM's backward (QKV, FC1): the data gradient with its TP reduction,
  /// the weight gradient on the re-gathered input (`gathered_input`, sequence parallelism).
  void column_linear_backward(const std::string& name, int64_t width, uint32_t gathered_input, double act_bytes);
  /// The shared input of separate projections of `width` outputs in all: its FP8 cast
  /// (and the weights' on the first micro-batch) and, with sequence parallelism, one TP
  /// all-gather.
  void split_linear_input(const std::string& name, int64_t width, double act_bytes);
  /// Separate projections' backward (fused_qkv = false): each `parts` GEMM's data gradient
  /// (full widths, split by tp here; autograd adds them: parts − 1 add kernels), the summed
  /// input gradient's TP reduction, and each weight gradient.
  void split_linear_backward(const std::vector<std::pair<std::string, int64_t>>& parts, const std::string& input,
                             double act_bytes);
  bool split_linears() const { return !job_.options.operators.fused_qkv; }
  int64_t kv_width() const { return (d_.qkv - d_.h) / 2; } // kv_heads·head_dim
  void residual(const std::string& name, int64_t inputs);
  void attention_core(bool backward);
  // context parallelism (context_parallel.cpp): the attention core as cp ring steps
  void cp_attention_forward();
  void cp_attention_backward();
  double cp_kv_bytes() const; // the K and V of this rank's tokens (one ring message)
  struct CpStep {             // one ring step's attention op (context_parallel.cpp)
    double flops = 0, bytes = 0;
    std::array<int64_t, 4> shape{};    // step 0: causal over the rank's own chunks
    std::array<int64_t, 4> unmasked{}; // steps ≥ 1: half a block, no mask (keys per query in [3])
    Kernel kernel{};
  };
  CpStep cp_step(bool forward) const;
  void attention_backward(); // (selective recomputation, then) the core's backward

  void attention_branch_backward_tail(); // attention core backward … QKV wgrad
  OpKind reduce_kind() const;            // reduce-scatter with SP, else all-reduce

  ProgramBuilder& b_;
  const JobSpec& job_;
  Dims d_;
  bool parallel_block_;
  bool flash_;
  Kernel attention_kernel_; // the attention core's kernel: unfused, FlashAttention-2 or cuDNN's
  bool fused_ln_;
  bool fused_gelu_;
  bool defer_wgrad_ = false;    // ZB-H1: wgrad() emits nothing in the B pass
  int64_t forward_matmuls_ = 0; // matmuls of the current layer_forward() so far
  /// Recomputing a layer under torchtitan's per-op policy
  /// (ScheduleOptions::recompute_saves_alternate_matmuls): the op's output was saved.
  bool saved_by_op_policy(bool matmul) const;
  int32_t cp_next_ = 0; // ring neighbours (Cp group ranks)
  int32_t cp_prev_ = 0;
  bool fp8_;
  std::vector<uint32_t> shared_pending_; // shared experts' reduce-scatters the MoE output needs
};

} // namespace twinscale::schedules::detail
