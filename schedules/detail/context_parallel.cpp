// Context parallelism: ring attention as Megatron-Core runs it through Transformer
// Engine's cp_comm_type = "p2p" (AttnFuncWithCPAndKVP2P).
//
// Each sequence is cut into 2·cp chunks and context-parallel rank i holds chunks i and
// 2·cp−1−i (Megatron's get_batch_on_this_cp_rank), so that under a causal mask every ring
// step does the same work. A rank's attention core runs cp steps: step k computes its
// queries against the K/V block it holds (its own at k = 0, then the block of the rank k
// places before it), while the block for step k+1 travels around the ring — a send to the
// next cp rank and a receive from the previous one on the CpSend/CpRecv streams, overlapped
// with step k's computation. A final pass merges the cp partial outputs with their
// log-sum-exp (TE's out correction).
//
// Backward: the K/V blocks circulate again, and so does each block's K/V gradient, one
// step behind its block (cp_attention_backward): step k computes dQ and this rank's
// contribution to the held block's dK/dV, adds it to the partial gradient that arrived
// from the previous rank during the step (k ≥ 1) and sends the sum on at step k + 1.
// After the last step each block's gradient has visited every rank and arrives back at its
// owner, which the input-gradient GEMM waits for.
//
// FLOPs: the model-FLOPs convention of attention_core (every key counted): the rank's
// s/cp queries against all s keys, split evenly over the cp steps. What a step executes:
// at k = 0 the rank's two chunks against themselves under the causal mask (shape[3] = 0:
// half the block); at k ≥ 1 a block with no mask and as many scores, either both query
// chunks against the first of the two key chunks it received or the second query chunk
// against both (TE's load balancing), written as the rank's s/cp queries each attending to
// s/(2·cp) keys (shape[3] = that: half the block; sim/device_model.hpp).
#include <algorithm>

#include "schedules/detail/layer_ops.hpp"

namespace twinscale::schedules::detail {

namespace {
constexpr double kBf16 = 2;
} // namespace

void LayerEmitter::set_cp_rank(int64_t cp_rank) {
  cp_next_ = static_cast<int32_t>((cp_rank + 1) % d_.cp);
  cp_prev_ = static_cast<int32_t>((cp_rank - 1 + d_.cp) % d_.cp);
  templates_.clear(); // their ring ops name the old neighbours
}

double LayerEmitter::cp_kv_bytes() const {
  const int64_t head_dim = d_.h / d_.a;
  const int64_t kv_local = std::max<int64_t>(1, job_.model.kv() / d_.t);
  return 2.0 * static_cast<double>(d_.tokens) * static_cast<double>(kv_local * head_dim) * kBf16;
}

/// One ring step's attention op: the local queries against one block of s/cp keys
/// (forward 4, backward 8 FLOPs per score and head dimension; unfused: 6.5 forward and 9.5
/// backward passes over the score matrix, as the whole-sequence kernels).
LayerEmitter::CpStep LayerEmitter::cp_step(bool forward) const {
  const int64_t heads_local = d_.a / d_.t;
  const int64_t head_dim = d_.h / d_.a;
  const double qkvo = static_cast<double>(d_.tokens) * static_cast<double>(d_.h / d_.t) * kBf16;
  const double scores =
      static_cast<double>(d_.b * heads_local) * static_cast<double>(d_.s) * static_cast<double>(d_.s) * kBf16;
  CpStep st;
  st.flops = (forward ? 4.0 : 8.0) * static_cast<double>(d_.b * heads_local) * static_cast<double>(d_.s) *
             static_cast<double>(d_.s) * static_cast<double>(head_dim);
  st.bytes = (forward ? 4 : 8) * qkvo + (flash_ ? 0.0 : (forward ? 6.5 : 9.5) * scores);
  st.shape = {d_.b * heads_local, d_.s, head_dim, 0};
  // (unfused attention computes every score of the block whatever the mask: one shape)
  st.unmasked =
      flash_ ? std::array<int64_t, 4>{d_.b * heads_local, d_.s, head_dim, std::max<int64_t>(1, d_.s / 2)} : st.shape;
  st.kernel = attention_kernel_;
  return st;
}

void LayerEmitter::cp_attention_forward() {
  const int64_t n = d_.cp;
  const CpStep st = cp_step(true);
  const double kv = cp_kv_bytes();
  uint32_t held = b_.last_compute(); // the QKV GEMM: this rank's own K/V block
  for (int64_t k = 0; k < n; ++k) {
    uint32_t incoming = kNoOp;
    if (k + 1 < n) {
      b_.p2p(OpKind::Send, cp_next_, "attn.cp.send.kv", kv, {held}, GroupKind::Cp);
      incoming = b_.p2p(OpKind::Recv, cp_prev_, "attn.cp.recv.kv", kv, {held}, GroupKind::Cp);
    }
    b_.compute(OpKind::Attention, st.kernel, "attn.core.cp", st.flops, st.bytes, k == 0 ? st.shape : st.unmasked,
               {held});
    held = incoming;
  }
  // merge the cp partial outputs by their log-sum-exp: read each (and its LSE), write O
  const double e = static_cast<double>(d_.tokens) * static_cast<double>(d_.h / d_.t);
  b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, "attn.cp.correction", 3 * static_cast<double>(n) * e,
             (static_cast<double>(n) + 1) * e * kBf16, {d_.tokens * (d_.h / d_.t), 0, 0, 0});
}

void LayerEmitter::cp_attention_backward() {
  // Transformer Engine's backward (AttnFuncWithCPAndKVP2P.backward): at step k the rank
  // sends on the K/V block it holds (k < cp − 1) together with the K/V gradient it finished
  // at step k − 1 (k ≥ 1) and receives the next block with that block's partial gradient;
  // the step's attention backward needs only the held block, and the "dkv correction"
  // after it adds this rank's contribution to the partial received during the step. The
  // gradient thus travels one step behind its block, overlapped with the next step.
  const int64_t n = d_.cp;
  const CpStep st = cp_step(false);
  const double kv = cp_kv_bytes();
  const double kv_elements = kv / kBf16;
  uint32_t held = b_.last_compute(); // the output gradient is ready; own K/V kept from forward
  uint32_t finished = kNoOp;         // the gradient this rank completed at the previous step
  for (int64_t k = 0; k < n; ++k) {
    uint32_t incoming = kNoOp, partial = kNoOp;
    if (k + 1 < n) {
      b_.p2p(OpKind::Send, cp_next_, "attn.cp.send.kv", kv, {held}, GroupKind::Cp);
      incoming = b_.p2p(OpKind::Recv, cp_prev_, "attn.cp.recv.kv", kv, {held}, GroupKind::Cp);
    }
    if (k >= 1) {
      b_.p2p(OpKind::Send, cp_next_, "attn.cp.send.dkv", kv, {finished}, GroupKind::Cp);
      partial = b_.p2p(OpKind::Recv, cp_prev_, "attn.cp.recv.dkv", kv, {held}, GroupKind::Cp);
    }
    finished = b_.compute(OpKind::Attention, st.kernel, "attn.core.cp.bwd", st.flops, st.bytes,
                          k == 0 ? st.shape : st.unmasked, {held});
    if (partial != kNoOp) // read the partial and this step's dK/dV, write the sum
      finished = b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, "attn.cp.dkv.correction", kv_elements, 3 * kv,
                            {static_cast<int64_t>(kv_elements), 0, 0, 0}, {finished, partial});
    held = incoming;
  }
  // the last gradient finished goes one hop on, to the owner of its block; this rank's
  // own dK/dV arrives the same way, and the input-gradient GEMM waits for it
  b_.p2p(OpKind::Send, cp_next_, "attn.cp.send.dkv", kv, {finished}, GroupKind::Cp);
  b_.wait_before_next_compute(b_.p2p(OpKind::Recv, cp_prev_, "attn.cp.recv.dkv", kv, {finished}, GroupKind::Cp));
}

} // namespace twinscale::schedules::detail
