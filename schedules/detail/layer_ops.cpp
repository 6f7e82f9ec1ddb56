// Ops of a GPT layer under Megatron-style tensor (+ sequence) parallelism.
// Shapes per TP rank: m = micro_batch·seq tokens (m/tp for elementwise ops with sequence
// parallelism); column-parallel GEMMs (QKV, FC1, LM head) split n by tp, row-parallel
// (projection, FC2) split k by tp. Backward = dgrad + wgrad GEMMs (2× forward FLOPs).
// TP communication: with sequence parallelism all-gather before and reduce-scatter after
// each branch (mirrored in backward, plus the all-gather of the branch input for the
// weight gradient); without it, all-reduce after each branch (forward) and of the input
// gradient (backward). M6: with overlap.tp, GEMM + collective pairs are split into
// tp_chunks pieces so that the collective of chunk i runs on TpComm while the GEMM of
// chunk i±1 runs on Compute. M1: the parallel block shares one LayerNorm and one
// all-gather, and the reduce-scatter of one branch overlaps the other branch's GEMMs.
#include "schedules/detail/layer_ops.hpp"

#include <algorithm>

namespace twinscale::schedules::detail {

namespace {
constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
} // namespace

LayerEmitter::LayerEmitter(ProgramBuilder& builder, const JobSpec& job)
    : b_(builder), job_(job), d_(Dims::of(job)), parallel_block_(job.model.block == BlockKind::Parallel),
      flash_(job.options.operators.flash_attention),
      attention_kernel_(!flash_                                                              ? Kernel::AttentionUnfused
                        : job.options.operators.attention_backend == AttentionBackend::Cudnn ? Kernel::CudnnAttention
                                                                                             : Kernel::FlashAttention2),
      fused_ln_(job.options.operators.fused_layernorm), fused_gelu_(job.options.operators.fused_gelu),
      fp8_(job.options.fp8()) {}

OpKind LayerEmitter::reduce_kind() const { return d_.sp ? OpKind::ReduceScatter : OpKind::AllReduce; }

bool LayerEmitter::saved_by_op_policy(bool matmul) const {
  if (b_.labels.phase != Phase::Recompute || !job_.options.recompute_saves_alternate_matmuls) return false;
  // torchtitan counts the matmuls of each checkpointed forward from 1 and saves the odd ones
  return !matmul || forward_matmuls_ % 2 == 1;
}

uint32_t LayerEmitter::gemm(const std::string& name, int64_t m, int64_t n, int64_t k,
                            std::initializer_list<uint32_t> deps, int64_t chunks) {
  ++forward_matmuls_;
  if (saved_by_op_policy(true)) return b_.last_compute();
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double bytes = gemm_input_bytes(name) * (static_cast<double>(m) * k + static_cast<double>(k) * n) +
                       kBf16 * static_cast<double>(m) * n; // the output is BF16 in both precisions
  // shape[3] = the chunks of an overlapped GEMM (M6): MegaScale fuses the collective into
  // the GEMM kernel and Transformer Engine's userbuffers overlap runs the chunk GEMMs on
  // several streams, so the chunks' tiles fill the SMs' waves together (the device model
  // counts the waves of all chunks' tiles, sim/device_model.cpp); 0 = an unsplit GEMM.
  return b_.compute(OpKind::Gemm, Kernel::Gemm, name, flops, bytes, {m, n, k, chunks > 1 ? chunks : 0}, deps,
                    gemm_dtype(name));
}

uint32_t LayerEmitter::wgrad(const std::string& name, int64_t m, int64_t n, int64_t k,
                             std::initializer_list<uint32_t> deps) {
  if (defer_wgrad_) return kNoOp; // ZB-H1: emitted by the W pass (zero_bubble.cpp)
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double inputs = gemm_input_bytes(name) * (static_cast<double>(m) * k + static_cast<double>(k) * n);
  const double mn = static_cast<double>(m) * static_cast<double>(n);
  const DType dtype = gemm_dtype(name);
  // FP8 with sequence parallelism: the all-gathered FP8 tensor (input, or output gradient
  // of a row-parallel GEMM: tokens × h) is transposed for the weight gradient (TE casts the
  // local shard before the gather, so no transpose of the whole tensor exists yet).
  if (dtype == DType::FP8 && d_.sp) fp8_cast(name + ".fp8_transpose", d_.tokens * d_.h, 2 * 1.0, deps);
  if (job_.options.grad_accumulation_fusion) {
    // Megatron's --gradient-accumulation-fusion: the GEMM reads and writes the m×n fp32
    // main gradient (β = 1) instead of writing a bf16 one.
    return b_.compute(OpKind::Gemm, Kernel::Gemm, name, flops, inputs + 2 * kFp32 * mn, {m, n, k, 0}, deps, dtype);
  }
  // Unfused (Megatron-LM of SC'21, local DDP's param hook main_grad.add_(grad)): the GEMM
  // writes a 16-bit gradient, then one kernel reads it and reads and writes the main
  // gradient (fp32 or 16-bit, the DP reduction's type), per weight and micro-batch.
  const uint32_t g =
      b_.compute(OpKind::Gemm, Kernel::Gemm, name, flops, inputs + kBf16 * mn, {m, n, k, 0}, deps, dtype);
  const double main = job_.options.grad_reduce_fp32 ? kFp32 : kBf16;
  b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, name + ".accumulate", mn, mn * (kBf16 + 2 * main),
             {m * n, 0, 0, 0});
  return g;
}

uint32_t LayerEmitter::tp_collective(OpKind kind, const std::string& name, double bytes,
                                     std::initializer_list<uint32_t> deps, DType dtype) {
  return b_.collective(kind, GroupKind::Tp, Stream::TpComm, name, bytes, deps, 0, dtype);
}

std::vector<uint32_t> LayerEmitter::gemm_then_collective(const std::string& name, int64_t m, int64_t n, int64_t k,
                                                         OpKind collective, double bytes) {
  std::vector<uint32_t> out;
  fp8_input(name, m, k, n, 1, false);
  if (d_.t == 1) {
    gemm(name, m, n, k);
    return out;
  }
  const int64_t chunks = d_.tp_chunks;
  out.reserve(static_cast<size_t>(chunks));
  const std::string coll_name = name + (collective == OpKind::ReduceScatter ? ".rs" : ".ar");
  for (int64_t i = 0; i < chunks; ++i) {
    const uint32_t g = gemm(name, m / chunks, n, k, {}, chunks);
    out.push_back(tp_collective(collective, coll_name, bytes / static_cast<double>(chunks), {g}));
  }
  return out;
}

void LayerEmitter::unless_async(const std::vector<uint32_t>& collectives) {
  // Without Megatron's async TP all-reduce the input gradient's collective overlaps no
  // GEMM (Megatron of 2021 ran it after both the dgrad and the wgrad GEMM; the same total).
  if (!job_.options.tp_async_allreduce) b_.wait_before_next_compute(collectives);
}

void LayerEmitter::collective_then_gemm(OpKind collective, double bytes, const std::string& name, int64_t m, int64_t n,
                                        int64_t k) {
  if (d_.t == 1 || !d_.sp) {
    fp8_input(name, m, k, n, 1, false);
    gemm(name, m, n, k);
    return;
  }
  fp8_input(name, m / d_.t, k, n, 1, true); // FP8: the local shard is cast, the gather moves FP8
  const int64_t chunks = d_.tp_chunks;
  const uint32_t input = b_.last_compute();
  const double gathered = bytes * gather_scale(name);
  for (int64_t i = 0; i < chunks; ++i) {
    const uint32_t c = tp_collective(collective, name + ".ag", gathered / static_cast<double>(chunks), {input});
    gemm(name, m / chunks, n, k, {c}, chunks);
  }
}

void LayerEmitter::layernorm(const std::string& name, bool backward) {
  if (d_.rmsnorm) {
    rmsnorm(name, backward);
    return;
  }
  const double e = static_cast<double>(d_.tokens_local) * static_cast<double>(d_.h);
  const std::array<int64_t, 4> shape{d_.tokens_local * d_.h, 0, 0, 0};
  if (!backward) {
    if (fused_ln_) {
      b_.compute(OpKind::Elementwise, Kernel::FusedLayerNorm, name, 8 * e, 2 * e * kBf16, shape);
    } else { // mean, variance, normalise + affine: three passes over the activation
      b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".mean", 1 * e, e * kBf16, shape);
      b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".var", 3 * e, e * kBf16, shape);
      b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".norm", 4 * e, 2 * e * kBf16, shape);
    }
    return;
  }
  if (fused_ln_) {
    b_.compute(OpKind::Elementwise, Kernel::FusedLayerNorm, name + ".bwd", 10 * e, 3 * e * kBf16, shape);
  } else {
    b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".bwd.wgrad", 3 * e, 2 * e * kBf16, shape);
    b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".bwd.sums", 3 * e, 2 * e * kBf16, shape);
    b_.compute(OpKind::Elementwise, Kernel::LayerNorm, name + ".bwd.dx", 4 * e, 3 * e * kBf16, shape);
  }
}

void LayerEmitter::rmsnorm(const std::string& name, bool backward) {
  // RMSNorm (Zhang & Sennrich 2019): y = x/√(mean x² + ε)·g — no mean, no bias. Fused: one
  // kernel each way. Unfused, the form every eager PyTorch model writes (torchtitan's
  // models/llama/model.py RMSNorm, Hugging Face's LlamaRMSNorm): the activation is cast to
  // fp32, normalised there and cast back, y = (x.float() · rsqrt(x.float().pow(2).mean(-1)
  // + ε)).type_as(x) · g, each operator its own kernel over the whole activation; autograd
  // replays the chain backward in fp32.
  const double e = static_cast<double>(d_.tokens_local) * static_cast<double>(d_.h);
  const std::array<int64_t, 4> shape{d_.tokens_local * d_.h, 0, 0, 0};
  const auto pass = [&](const char* suffix, double flops_per_element, double bytes_per_element) {
    b_.compute(OpKind::Elementwise, Kernel::RmsNorm, name + suffix, flops_per_element * e, bytes_per_element * e,
               shape);
  };
  if (!backward) {
    if (fused_ln_) {
      pass("", 5, 2 * kBf16);
      return;
    }
    pass(".float", 0, 2 + 4);   // x.float(): read bf16, write fp32
    pass(".pow", 1, 4 + 4);     // x²
    pass(".mean", 1, 4);        // mean over the hidden dimension (a row per token)
    pass(".mul", 1, 4 + 4);     // x · rsqrt(mean + ε) (the per-token rsqrt is negligible)
    pass(".type_as", 0, 4 + 2); // back to bf16
    pass(".gain", 1, 2 + 2);    // · g
    return;
  }
  if (fused_ln_) {
    pass(".bwd", 8, 3 * kBf16);
    return;
  }
  pass(".bwd.gain", 2, 2 + 2 + 2 + 2 + 2); // dy·g, and dg = Σ_tokens dy·y (a product, then its sum)
  pass(".bwd.type_as", 0, 2 + 4);          // the gradient back to fp32
  pass(".bwd.mul", 1, 4 + 4);              // d(x·r) → dx·r
  pass(".bwd.rsum", 2, 4 + 4 + 4 + 4);     // dr = Σ_hidden dx·x (a product, then its sum)
  pass(".bwd.pow", 2, 4 + 4);              // through mean and x²: 2x·dr/h
  pass(".bwd.add", 1, 4 + 4 + 4);          // the two paths to x summed
  pass(".bwd.float", 0, 4 + 2);            // the gradient cast back to bf16
}

void LayerEmitter::gelu(bool backward) { activation("mlp", d_.tokens * (d_.f / d_.t), backward); }

void LayerEmitter::activation(const std::string& prefix, int64_t elements, bool backward) {
  const double e = static_cast<double>(elements);
  const std::array<int64_t, 4> shape{elements, 0, 0, 0};
  if (d_.swiglu && fused_gelu_) { // silu(gate)·up: read gate and up, write the product (backward: both grads)
    if (!backward)
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".swiglu", 6 * e, 3 * e * kBf16, shape);
    else
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".swiglu.bwd", 10 * e, 5 * e * kBf16, shape);
    return;
  }
  if (d_.squared_relu) {
    // torch.pow(F.relu(x), 2) under Megatron-Core's and NeMo's @jit_fuser (torch.compile:
    // megatron/training/activations.py, NeMo 2.0 nlp/modules/common/megatron/utils.py), with
    // or without bias-activation fusion (which covers GeLU and SwiGLU only): one kernel
    // reads x and writes relu(x)²; its backward reads the gradient and the saved x and
    // writes 2·relu(x)·grad.
    if (!backward)
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".squared_relu", 2 * e, 2 * e * kBf16, shape);
    else
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".squared_relu.bwd", 3 * e, 3 * e * kBf16, shape);
    return;
  }
  if (d_.swiglu) { // eager F.silu(gate) * up: two kernels, and autograd's two backward kernels
    if (!backward) {
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".silu", 4 * e, 2 * e * kBf16, shape); // r gate, w
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".mul", e, 3 * e * kBf16, shape);      // r silu, up; w
    } else { // mul's backward: d silu = g·up and d up = g·silu (r 4, w 2); silu's: r gate, d silu; w d gate
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".mul.bwd", 2 * e, 6 * e * kBf16, shape);
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".silu.bwd", 6 * e, 3 * e * kBf16, shape);
    }
    return;
  }
  if (!backward) {
    if (fused_gelu_) {
      b_.compute(OpKind::Elementwise, Kernel::FusedBiasGelu, prefix + ".gelu", 9 * e, 2 * e * kBf16, shape);
    } else {
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".bias_add", e, 2 * e * kBf16, shape);
      b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".gelu", 8 * e, 2 * e * kBf16, shape);
    }
    return;
  }
  if (fused_gelu_) {
    b_.compute(OpKind::Elementwise, Kernel::FusedBiasGelu, prefix + ".gelu.bwd", 12 * e, 3 * e * kBf16, shape);
  } else {
    b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".gelu.bwd", 11 * e, 3 * e * kBf16, shape);
    b_.compute(OpKind::Elementwise, Kernel::Gelu, prefix + ".bias.bwd", e, e * kBf16, shape);
  }
}

void LayerEmitter::dropout(const std::string& name, bool backward) {
  if (!(job_.model.dropout > 0)) return; // p = 0: PyTorch's dropout returns its input, no kernel
  const double e = static_cast<double>(d_.tokens_local) * static_cast<double>(d_.h);
  // read, write (bf16) and a one-byte mask
  b_.compute(OpKind::Elementwise, Kernel::Dropout, backward ? name + ".bwd" : name, 2 * e, 2 * e * kBf16 + e,
             {d_.tokens_local * d_.h, 0, 0, 0});
}

void LayerEmitter::residual(const std::string& name, int64_t inputs) {
  const double e = static_cast<double>(d_.tokens_local) * static_cast<double>(d_.h);
  b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, name, static_cast<double>(inputs - 1) * e,
             static_cast<double>(inputs + 1) * e * kBf16, {d_.tokens_local * d_.h, 0, 0, 0});
}

void LayerEmitter::rope(bool backward) {
  if (!job_.model.rotary) return;
  const int64_t head_dim = d_.h / d_.a;
  const std::string pass = backward ? ".bwd" : "";
  for (const auto& [tensor, width] : {std::pair<std::string, int64_t>{"q", d_.h / d_.t}, {"k", kv_width() / d_.t}}) {
    const int64_t elements = d_.tokens * width;
    const double e = static_cast<double>(elements);
    const std::array<int64_t, 4> shape{elements, head_dim, 0, 0};
    const std::string name = "attn.rope." + tensor + pass;
    if (job_.options.operators.fused_rope) { // TE's fused RoPE: read and write the tensor once
      b_.compute(OpKind::Elementwise, Kernel::Rope, name, 3 * e, 2 * e * kBf16, shape);
      continue;
    }
    // torchtitan's apply_rotary_emb: x.float() (r 2, w 4 bytes), the complex product with
    // freqs_cis (r 4, w 4), .type_as(x) (r 4, w 2); autograd's backward mirrors the three.
    b_.compute(OpKind::Elementwise, Kernel::Copy, name + ".float", 0, 6 * e, shape);
    b_.compute(OpKind::Elementwise, Kernel::Rope, name + ".mul", 3 * e, 8 * e, shape);
    b_.compute(OpKind::Elementwise, Kernel::Copy, name + ".cast", 0, 6 * e, shape);
  }
}

void LayerEmitter::qkv_forward(double act_bytes) {
  const int64_t m = d_.tokens;
  if (!split_linears()) {
    collective_then_gemm(OpKind::AllGather, act_bytes, "attn.qkv", m, d_.qkv / d_.t, d_.h);
    return;
  }
  split_linear_input("attn.qkv", d_.qkv, act_bytes);
  gemm("attn.q", m, d_.h / d_.t, d_.h);
  gemm("attn.k", m, kv_width() / d_.t, d_.h);
  gemm("attn.v", m, kv_width() / d_.t, d_.h);
}

void LayerEmitter::column_linear_backward(const std::string& name, int64_t width, uint32_t gathered_input,
                                          double act_bytes) {
  const auto rs = gemm_then_collective(name + ".dgrad", d_.tokens, d_.h, width / d_.t, reduce_kind(), act_bytes);
  unless_async(rs);
  wgrad(name + ".wgrad", width / d_.t, d_.h, d_.tokens, {gathered_input});
  b_.wait_before_next_compute(rs);
}

void LayerEmitter::split_linear_input(const std::string& name, int64_t width, double act_bytes) {
  const int64_t m = d_.tokens;
  if (d_.t > 1 && d_.sp) { // one all-gather of the shared input feeds every projection
    fp8_input(name, m / d_.t, d_.h, width / d_.t, 1, true);
    const uint32_t input = b_.last_compute();
    b_.wait_before_next_compute(
        tp_collective(OpKind::AllGather, name + ".ag", act_bytes * gather_scale(name), {input}));
    return;
  }
  fp8_input(name, m, d_.h, width / d_.t, 1, false); // one input, cast once
}

void LayerEmitter::fc1_forward(double act_bytes) {
  const int64_t m = d_.tokens;
  if (!split_linears() || !d_.swiglu) {
    collective_then_gemm(OpKind::AllGather, act_bytes, "mlp.fc1", m, d_.fc1 / d_.t, d_.h);
    return;
  }
  split_linear_input("mlp.fc1", d_.fc1, act_bytes);
  gemm("mlp.w1", m, d_.f / d_.t, d_.h);
  gemm("mlp.w3", m, d_.f / d_.t, d_.h);
}

void LayerEmitter::split_linear_backward(const std::vector<std::pair<std::string, int64_t>>& parts,
                                         const std::string& input, double act_bytes) {
  const int64_t m = d_.tokens;
  const double e = static_cast<double>(m) * static_cast<double>(d_.h);
  // With sequence parallelism the weight gradients need the all-gathered input again.
  const uint32_t ag = d_.t > 1 && d_.sp ? tp_collective(OpKind::AllGather, input + ".wgrad.ag",
                                                        act_bytes * gather_scale(input), {b_.last_compute()})
                                        : kNoOp;
  bool first = true;
  for (const auto& [name, n] : parts) {
    fp8_input(name + ".dgrad", m, n / d_.t, d_.h, 1, false);
    gemm(name + ".dgrad", m, d_.h, n / d_.t);
    if (!first) // autograd accumulates the input's gradient: read both, write the sum
      b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, name + ".dgrad.add", e, 3 * e * kBf16, {m * d_.h, 0, 0, 0});
    first = false;
  }
  std::vector<uint32_t> rs; // the summed input gradient reduced over TP once
  if (d_.t > 1)
    rs.push_back(
        tp_collective(reduce_kind(), input + (d_.sp ? ".dgrad.rs" : ".dgrad.ar"), act_bytes, {b_.last_compute()}));
  unless_async(rs);
  for (const auto& [name, n] : parts) wgrad(name + ".wgrad", n / d_.t, d_.h, m, {ag});
  b_.wait_before_next_compute(rs);
}

void LayerEmitter::attention_core(bool backward) {
  if (d_.cp > 1) { // ring attention over the context-parallel group (context_parallel.cpp)
    if (backward)
      cp_attention_backward();
    else
      cp_attention_forward();
    return;
  }
  const int64_t heads_local = d_.a / d_.t;
  const int64_t head_dim = d_.h / d_.a;
  const int64_t keys = d_.window > 0 ? std::min(d_.window, d_.s) : d_.s; // keys per query
  // QKᵀ and P·V: 2 GEMMs of 2·s·keys·head_dim per head (all keys counted, as in
  // Narayanan et al.'s model-FLOPs convention; sliding window: s·w instead of s²).
  const double fwd_flops = 4.0 * static_cast<double>(d_.b * heads_local) * static_cast<double>(d_.s) *
                           static_cast<double>(keys) * static_cast<double>(head_dim);
  const double qkvo = static_cast<double>(d_.tokens) * static_cast<double>(d_.h / d_.t) * kBf16;
  const double scores =
      static_cast<double>(d_.b * heads_local) * static_cast<double>(d_.s) * static_cast<double>(keys) * kBf16;
  const std::array<int64_t, 4> shape{d_.b * heads_local, d_.s, head_dim, d_.window};
  const Kernel kernel = attention_kernel_;
  if (!backward && saved_by_op_policy(false)) return; // the attention output was saved
  if (!backward) {
    // Flash: read Q, K, V, write O. Unfused (Megatron's baddbmm, fused scale-mask-softmax,
    // dropout, bmm): the score GEMM writes the s×keys scores (1), softmax reads and writes
    // them (2), dropout reads and writes them and writes a one-byte mask (2.5), the P·V
    // GEMM reads them (1): 6.5 passes (4 without dropout: model.dropout = 0).
    const double dropout_passes = job_.model.dropout > 0 ? 2.5 : 0.0;
    const double bytes = 4 * qkvo + (flash_ ? 0.0 : (4 + dropout_passes) * scores);
    b_.compute(OpKind::Attention, kernel, "attn.core", fwd_flops, bytes, shape);
  } else {
    // Model FLOPs of the backward: 2× forward (FlashAttention-2 recomputes the scores on
    // top; that cost belongs to the device model's efficiency for the kernel).
    // Unfused: dP = dO·Vᵀ writes (1), dV = Pᵀ·dO reads P (1), dropout backward reads dP
    // and the mask and writes (2.5), softmax backward reads its output and grad and writes
    // (3), dQ and dK read dS (2): 9.5 passes over the scores (7 without dropout).
    const double dropout_passes = job_.model.dropout > 0 ? 2.5 : 0.0;
    const double bytes = 8 * qkvo + (flash_ ? 0.0 : (7 + dropout_passes) * scores);
    b_.compute(OpKind::Attention, kernel, "attn.core.bwd", 2 * fwd_flops, bytes, shape);
  }
}

void LayerEmitter::attention_backward() {
  // Selective recomputation: the attention core's forward runs again right before its
  // backward (its s×keys activations were not kept); full recomputation already re-ran it.
  if (job_.options.selective_recompute && !job_.options.recompute) {
    const Phase saved = b_.labels.phase;
    b_.labels.phase = Phase::Recompute;
    attention_core(false);
    b_.labels.phase = saved;
  }
  attention_core(true);
}

void LayerEmitter::layer_forward_ops() {
  forward_matmuls_ = 0;
  const int64_t m = d_.tokens;
  const int64_t h = d_.h;
  const int64_t t = d_.t;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(h) * kBf16;
  if (!parallel_block_) {
    layernorm("attn.ln", false);
    qkv_forward(act_bytes);
    rope(false);
    attention_core(false);
    b_.wait_before_next_compute(gemm_then_collective("attn.proj", m, h, h / t, reduce_kind(), act_bytes));
    dropout("attn.dropout", false);
    residual("attn.residual", 2);
    layernorm("mlp.ln", false);
    if (moe_layer()) {
      moe_forward();
    } else {
      fc1_forward(act_bytes);
      gelu(false);
      b_.wait_before_next_compute(gemm_then_collective("mlp.fc2", m, h, d_.f / t, reduce_kind(), act_bytes));
    }
    dropout("mlp.dropout", false);
    residual("mlp.residual", 2);
    return;
  }
  // M1: one LayerNorm, one all-gather feeding both branches; the attention branch's
  // reduce-scatter runs while the MLP GEMMs compute.
  layernorm("ln", false);
  collective_then_gemm(OpKind::AllGather, act_bytes, "attn.qkv", m, d_.qkv / t, h);
  rope(false);
  attention_core(false);
  const auto attn_out = gemm_then_collective("attn.proj", m, h, h / t, reduce_kind(), act_bytes);
  fp8_input("mlp.fc1", m, h, d_.fc1 / t, 1, false);
  gemm("mlp.fc1", m, d_.fc1 / t, h);
  gelu(false);
  const auto mlp_out = gemm_then_collective("mlp.fc2", m, h, d_.f / t, reduce_kind(), act_bytes);
  b_.wait_before_next_compute(attn_out);
  b_.wait_before_next_compute(mlp_out);
  dropout("attn.dropout", false);
  dropout("mlp.dropout", false);
  residual("residual", 3);
}

void LayerEmitter::layer_backward_ops() {
  const int64_t m = d_.tokens;
  const int64_t h = d_.h;
  const int64_t t = d_.t;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(h) * kBf16;
  // With sequence parallelism the weight gradient of a column-parallel GEMM needs its
  // all-gathered input again; it is issued early and overlaps the data-gradient GEMM.
  // FP8: the saved input is the FP8 local shard, so the gather moves FP8.
  const double input_bytes = act_bytes * gather_scale("attn.qkv");
  auto gather_input = [&](const std::string& name) -> uint32_t {
    if (!d_.sp || defer_wgrad_) return kNoOp; // ZB-H1: the W pass gathers it
    return tp_collective(OpKind::AllGather, name, input_bytes, {b_.last_compute()});
  };
  if (!parallel_block_) {
    // MLP branch (last in forward, first in backward)
    dropout("mlp.dropout", true);
    if (moe_layer()) {
      moe_backward();
    } else {
      collective_then_gemm(OpKind::AllGather, act_bytes, "mlp.fc2.dgrad", m, d_.f / t, h);
      wgrad("mlp.fc2.wgrad", h, d_.f / t, m);
      gelu(true);
      if (split_linears() && d_.swiglu) {
        split_linear_backward({{"mlp.w1", d_.f}, {"mlp.w3", d_.f}}, "mlp.fc1", act_bytes);
      } else {
        column_linear_backward("mlp.fc1", d_.fc1, gather_input("mlp.fc1.wgrad.ag"), act_bytes);
      }
    }
    layernorm("mlp.ln", true);
    residual("mlp.residual.bwd", 2);
    // attention branch
    dropout("attn.dropout", true);
    collective_then_gemm(OpKind::AllGather, act_bytes, "attn.proj.dgrad", m, h / t, h);
    wgrad("attn.proj.wgrad", h, h / t, m);
    attention_backward();
    rope(true);
    if (split_linears()) {
      split_linear_backward({{"attn.q", h}, {"attn.k", kv_width()}, {"attn.v", kv_width()}}, "attn.qkv", act_bytes);
    } else {
      column_linear_backward("attn.qkv", d_.qkv, gather_input("attn.qkv.wgrad.ag"), act_bytes);
    }
    layernorm("attn.ln", true);
    residual("attn.residual.bwd", 2);
    return;
  }
  dropout("mlp.dropout", true);
  dropout("attn.dropout", true);
  // one all-gather of the output gradient serves both branches
  collective_then_gemm(OpKind::AllGather, act_bytes, "mlp.fc2.dgrad", m, d_.f / t, h);
  wgrad("mlp.fc2.wgrad", h, d_.f / t, m);
  gelu(true);
  const uint32_t ag = gather_input("ln.wgrad.ag");
  const auto rs_mlp = gemm_then_collective("mlp.fc1.dgrad", m, h, d_.fc1 / t, reduce_kind(), act_bytes);
  unless_async(rs_mlp);
  wgrad("mlp.fc1.wgrad", d_.fc1 / t, h, m, {ag});
  // the MLP's reduce-scatter overlaps the whole attention backward
  fp8_input("attn.proj.dgrad", m, h, h / t, 1, false);
  gemm("attn.proj.dgrad", m, h / t, h);
  wgrad("attn.proj.wgrad", h, h / t, m);
  attention_backward();
  rope(true);
  const auto rs_attn = gemm_then_collective("attn.qkv.dgrad", m, h, d_.qkv / t, reduce_kind(), act_bytes);
  unless_async(rs_attn);
  wgrad("attn.qkv.wgrad", d_.qkv / t, h, m);
  b_.wait_before_next_compute(rs_mlp);
  b_.wait_before_next_compute(rs_attn);
  layernorm("ln", true);
  residual("residual.bwd", 3);
}

void LayerEmitter::layer_forward() { layer_pass(true); }

void LayerEmitter::layer_backward() { layer_pass(false); }

/// A layer pass, replayed from an earlier one of the same kind that started from the same
/// builder state (its ops are the ones emission would give: see LayerTemplate), else
/// emitted and, where ProgramBuilder::span_since finds it replayable, recorded.
void LayerEmitter::layer_pass(bool forward) {
  auto emit = [&] { forward ? layer_forward_ops() : layer_backward_ops(); };
  if (!replay_ || moe_layer()) {
    emit();
    return;
  }
  const std::optional<ProgramBuilder::Context> before = b_.context();
  if (!before) {
    emit();
    return;
  }
  LayerTemplate key;
  key.forward = forward;
  key.phase = b_.labels.phase;
  key.defer_wgrad = defer_wgrad_;
  key.fp8_weights = casts_weights();
  for (const LayerTemplate& t : templates_) {
    if (!t.same_pass(key) || !(t.span.before == *before)) continue;
    b_.replay(t.span);
    ++replayed_;
    forward_matmuls_ = forward ? t.matmuls : forward_matmuls_ + t.matmuls;
    return;
  }
  const auto begin = static_cast<uint32_t>(b_.size());
  const OpLabels labels = b_.labels;
  const int64_t matmuls_before = forward_matmuls_;
  emit();
  std::optional<ProgramBuilder::Span> span = b_.span_since(begin, *before, labels);
  if (!span) return;
  key.span = std::move(*span);
  key.matmuls = forward ? forward_matmuls_ : forward_matmuls_ - matmuls_before;
  if (templates_.size() < kTemplates) {
    templates_.push_back(std::move(key));
    return;
  }
  templates_[next_template_] = std::move(key);
  next_template_ = (next_template_ + 1) % kTemplates;
}

void LayerEmitter::embedding_forward() {
  const double e = static_cast<double>(d_.tokens) * static_cast<double>(d_.h);
  b_.compute(OpKind::Elementwise, Kernel::Embedding, "embedding", 0, 2 * e * kBf16, {d_.tokens * d_.h, 0, 0, 0});
  if (d_.t > 1) // vocabulary-parallel lookup: partial rows summed over TP
    b_.wait_before_next_compute(tp_collective(reduce_kind(), "embedding.reduce", e * kBf16, {b_.last_compute()}));
  dropout("embedding.dropout", false);
}

void LayerEmitter::embedding_backward() {
  const double e = static_cast<double>(d_.tokens) * static_cast<double>(d_.h);
  dropout("embedding.dropout", true);
  if (d_.sp)
    b_.wait_before_next_compute(tp_collective(OpKind::AllGather, "embedding.bwd.ag", e * kBf16, {b_.last_compute()}));
  b_.compute(OpKind::Elementwise, Kernel::Embedding, "embedding.bwd", e, 2 * e * kBf16, {d_.tokens * d_.h, 0, 0, 0});
}

void LayerEmitter::head_forward() {
  const int64_t m = d_.tokens;
  const int64_t v = d_.vocab / d_.t;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(d_.h) * kBf16;
  const double logits = static_cast<double>(m) * static_cast<double>(v);
  layernorm("final_ln", false);
  collective_then_gemm(OpKind::AllGather, act_bytes, "lm_head", m, v, d_.h);
  // Vocabulary-parallel cross entropy in fp32 (Megatron-LM's vocab_parallel_cross_entropy
  // of output.float(): the cast, the max, in place x − max and exp, Σexp, in place division
  // into the softmax kept for backward), the max and then the predicted logit and Σexp
  // all-reduced over TP in FP32.
  const std::array<int64_t, 4> shape{m * v, 0, 0, 0};
  const double row_bytes = static_cast<double>(m) * kFp32;
  b_.compute(OpKind::Elementwise, Kernel::Copy, "loss.float", 0, logits * (kBf16 + kFp32), shape);
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss.max", logits, logits * kFp32, shape);
  if (d_.t > 1)
    b_.wait_before_next_compute(
        tp_collective(OpKind::AllReduce, "loss.max.ar", row_bytes, {b_.last_compute()}, DType::FP32));
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss.exp", 3 * logits, logits * 4 * kFp32, shape);
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss.sum", logits, logits * kFp32, shape);
  if (d_.t > 1) {
    const uint32_t c = b_.last_compute();
    b_.wait_before_next_compute(tp_collective(OpKind::AllReduce, "loss.target.ar", row_bytes, {c}, DType::FP32));
    b_.wait_before_next_compute(tp_collective(OpKind::AllReduce, "loss.sum.ar", row_bytes, {c}, DType::FP32));
  }
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss", static_cast<double>(m) * 4, row_bytes * 3,
             {m, 0, 0, 0});
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss.softmax", logits, logits * 2 * kFp32, shape);
}

void LayerEmitter::head_backward() {
  const int64_t m = d_.tokens;
  const int64_t v = d_.vocab / d_.t;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(d_.h) * kBf16;
  const double logits = static_cast<double>(m) * static_cast<double>(v);
  // the saved softmax minus the one-hot target, times the loss gradient (in place), then
  // autograd's cast of the fp32 gradient back to the logits' 16-bit type
  b_.compute(OpKind::Elementwise, Kernel::CrossEntropy, "loss.bwd", 2 * logits, logits * 2 * kFp32, {m * v, 0, 0, 0});
  b_.compute(OpKind::Elementwise, Kernel::Copy, "loss.bwd.cast", 0, logits * (kFp32 + kBf16), {m * v, 0, 0, 0});
  const uint32_t ag = d_.sp && !defer_wgrad_
                          ? tp_collective(OpKind::AllGather, "lm_head.wgrad.ag", act_bytes, {b_.last_compute()})
                          : kNoOp;
  const auto rs = gemm_then_collective("lm_head.dgrad", m, d_.h, v, reduce_kind(), act_bytes);
  unless_async(rs);
  wgrad("lm_head.wgrad", v, d_.h, m, {ag});
  b_.wait_before_next_compute(rs);
  layernorm("final_ln", true);
}

} // namespace twinscale::schedules::detail
