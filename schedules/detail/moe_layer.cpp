// The MLP branch of a mixture-of-experts layer (Megatron-LM's MoELayer with the
// all-to-all token dispatcher, expert tensor parallelism 1). Per rank, on its T local
// tokens (T = b·s/tp: with tp > 1 sequence parallelism is required, so each TP rank routes
// its own slice of the sequence to whole experts):
//  - shared experts (if any): an MLP of shared_experts·moe_ffn_hidden split over TP like
//    the dense MLP (all-gather, FC1, activation, FC2, reduce-scatter);
//  - the router GEMM (T × experts × h), softmax + top-k, and the permutation of the T·k
//    routed token rows into expert order;
//  - the dispatch all-to-all over the EP group, the experts' FC1, activation and FC2 as
//    grouped GEMMs over the rank's experts/ep experts, the combine all-to-all, and the
//    un-permutation (the weighted sum of each token's k expert outputs).
// Routing imbalance (moe_routing.hpp): the busiest EP rank processes load·T·k token rows
// and receives load times the balanced all-to-all bytes; every rank of the group waits
// for it, so the grouped GEMMs and the all-to-alls are sized for that rank.
// Backward mirrors forward: the combine's gradient travels back by all-to-all, expert
// data- and weight-gradient GEMMs (weight gradients accumulated in fp32), the dispatch's
// gradient by all-to-all (the shared experts' backward overlaps it), then the router's.
#include <algorithm>
#include <cmath>

#include "schedules/detail/layer_ops.hpp"
#include "schedules/detail/moe_routing.hpp"

namespace twinscale::schedules::detail {

namespace {
constexpr double kBf16 = 2;
constexpr double kFp32 = 4;
} // namespace

bool LayerEmitter::moe_layer() const { return b_.labels.layer >= 0 && job_.model.is_moe_layer(b_.labels.layer); }

double LayerEmitter::moe_load() const {
  return hottest_rank_load(job_.model, d_.ep, b_.labels.iteration, b_.labels.micro_batch, b_.labels.layer);
}

uint32_t LayerEmitter::expert_gemm(const std::string& name, int64_t m, int64_t n, int64_t k, bool weight_grad) {
  // One grouped GEMM over the rank's experts: the routed rows' activations in and out,
  // and each local expert's k×n weights read once (weight gradient: read and written in
  // fp32, as Megatron's main gradients).
  // FP8 (fp8.cpp): inputs of one byte; the routed rows are cast before a forward or
  // data-gradient GEMM, the local experts' weights on the first micro-batch.
  const double in = gemm_input_bytes(name);
  if (!weight_grad) fp8_input(name, m, k, n, d_.experts_local, false);
  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double weights =
      static_cast<double>(d_.experts_local) * static_cast<double>(weight_grad ? m : k) * static_cast<double>(n);
  const double acts = weight_grad ? in * static_cast<double>(k) * static_cast<double>(m + n)
                                  : in * static_cast<double>(m) * static_cast<double>(k) +
                                        kBf16 * static_cast<double>(m) * static_cast<double>(n);
  const double bytes = acts + (weight_grad ? 2 * kFp32 : in) * weights;
  return b_.compute(OpKind::Gemm, Kernel::Gemm, name, flops, bytes, {m, n, k, 0}, {}, gemm_dtype(name));
}

uint32_t LayerEmitter::ep_all_to_all(const std::string& name, double bytes, bool combine, bool overlapped) {
  if (d_.ep == 1) return kNoOp;
  const int64_t node = job_.parallel.ep_domain();
  if (node <= 1 || node >= d_.ep) { // flat (or hierarchical with one phase empty: the same ops)
    const uint32_t op =
        b_.collective(OpKind::AllToAll, GroupKind::Ep, Stream::TpComm, name, bytes, {b_.last_compute()});
    if (!overlapped) b_.wait_before_next_compute(op);
    return op;
  }
  auto suffix = [](GroupKind g) { return g == GroupKind::EpNode ? ".node" : ".rail"; };
  if (job_.parallel.max_nodes_per_token > 0) {
    // Node-limited routing, dispatched as DeepEP does: each (token, destination domain)
    // crosses the rail once, to the GPU of the sender's local index there, which forwards
    // it over NVLink to its (on average top_k/domains) experts in that domain; the combine
    // reduces a token's outputs inside the domain and sends one row back over the rail.
    const double domains = mean_token_domains(job_.model, d_.ep, node, job_.parallel.max_nodes_per_token,
                                              b_.labels.iteration, b_.labels.micro_batch, b_.labels.layer);
    const double rail = bytes * domains / static_cast<double>(d_.top_k);
    const GroupKind first = combine ? GroupKind::EpNode : GroupKind::EpRail;
    const GroupKind second = combine ? GroupKind::EpRail : GroupKind::EpNode;
    auto bytes_of = [&](GroupKind g) { return g == GroupKind::EpRail ? rail : bytes; };
    const uint32_t a = b_.collective(OpKind::AllToAll, first, Stream::TpComm, name + suffix(first), bytes_of(first),
                                     {b_.last_compute()});
    const uint32_t op =
        b_.collective(OpKind::AllToAll, second, Stream::TpComm, name + suffix(second), bytes_of(second), {a});
    if (!overlapped) b_.wait_before_next_compute(op);
    return op;
  }
  // Hierarchical (Tutel 2DH / DeepSpeed-MoE): every rank's `bytes` cross NVLink once, to
  // the domain peer with the destination's local index, are regrouped by destination
  // domain (a strided copy: read and write), then cross the rail once, ep/ep_node peers.
  // The combine runs the phases in the opposite order.
  const GroupKind first = combine ? GroupKind::EpRail : GroupKind::EpNode;
  const GroupKind second = combine ? GroupKind::EpNode : GroupKind::EpRail;
  const uint32_t a =
      b_.collective(OpKind::AllToAll, first, Stream::TpComm, name + suffix(first), bytes, {b_.last_compute()});
  b_.wait_before_next_compute(a);
  const auto elements = static_cast<int64_t>(bytes / kBf16);
  b_.compute(OpKind::Elementwise, Kernel::MoePermute, name + ".regroup", 0, 2 * bytes, {elements, 0, 0, 0});
  const uint32_t op =
      b_.collective(OpKind::AllToAll, second, Stream::TpComm, name + suffix(second), bytes, {b_.last_compute()});
  if (!overlapped) b_.wait_before_next_compute(op);
  return op;
}

void LayerEmitter::shared_experts(bool backward) {
  if (d_.shared_experts == 0) return;
  const int64_t m = d_.tokens;
  const int64_t t = d_.t;
  const int64_t f = d_.shared_experts * d_.fm;
  const int64_t fc1 = d_.shared_experts * d_.fc1m;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(d_.h) * kBf16;
  if (!backward) {
    collective_then_gemm(OpKind::AllGather, act_bytes, "moe.shared.fc1", m, fc1 / t, d_.h);
    activation("moe.shared", m * (f / t), false);
    shared_pending_ = gemm_then_collective("moe.shared.fc2", m, d_.h, f / t, reduce_kind(), act_bytes);
    return;
  }
  collective_then_gemm(OpKind::AllGather, act_bytes, "moe.shared.fc2.dgrad", m, f / t, d_.h);
  wgrad("moe.shared.fc2.wgrad", d_.h, f / t, m);
  activation("moe.shared", m * (f / t), true);
  const uint32_t ag =
      d_.sp ? tp_collective(OpKind::AllGather, "moe.shared.fc1.wgrad.ag", act_bytes, {b_.last_compute()}) : kNoOp;
  shared_pending_ = gemm_then_collective("moe.shared.fc1.dgrad", m, d_.h, fc1 / t, reduce_kind(), act_bytes);
  wgrad("moe.shared.fc1.wgrad", fc1 / t, d_.h, m, {ag});
}

void LayerEmitter::moe_forward() {
  const int64_t T = d_.tokens_local;
  const int64_t h = d_.h;
  const int64_t E = d_.experts;
  const int64_t k = d_.top_k;
  const double load = moe_load();
  const auto routed = std::max<int64_t>(1, std::llround(static_cast<double>(T * k) * load));
  const double rows = static_cast<double>(T * k) * static_cast<double>(h); // routed elements, balanced
  shared_experts(false);
  gemm("moe.router", T, E, h);
  b_.compute(OpKind::Elementwise, Kernel::MoeRouting, "moe.route", 5.0 * static_cast<double>(T * E),
             static_cast<double>(T * E) * 2 * kFp32 + static_cast<double>(T * k) * 8, {T * E, E, k, 0});
  b_.compute(OpKind::Elementwise, Kernel::MoePermute, "moe.permute", 0, 2 * rows * kBf16, {T * k * h, 0, 0, 0});
  ep_all_to_all("moe.dispatch.a2a", rows * kBf16 * load, false);
  expert_gemm("moe.expert.fc1", routed, d_.fc1m, h, false);
  activation("moe.expert", routed * d_.fm, false);
  expert_gemm("moe.expert.fc2", routed, h, d_.fm, false);
  ep_all_to_all("moe.combine.a2a", rows * kBf16 * load, true);
  b_.wait_before_next_compute(shared_pending_);
  shared_pending_.clear();
  // weighted sum of each token's k expert outputs (and the shared experts' output)
  b_.compute(OpKind::Elementwise, Kernel::MoePermute, "moe.unpermute", rows,
             (rows + static_cast<double>(T * h)) * kBf16, {T * k * h, 0, 0, 0});
}

void LayerEmitter::moe_backward() {
  const int64_t T = d_.tokens_local;
  const int64_t h = d_.h;
  const int64_t E = d_.experts;
  const int64_t k = d_.top_k;
  const double load = moe_load(); // the forward's draw: same (iteration, micro-batch, layer)
  const auto routed = std::max<int64_t>(1, std::llround(static_cast<double>(T * k) * load));
  const double rows = static_cast<double>(T * k) * static_cast<double>(h);
  b_.compute(OpKind::Elementwise, Kernel::MoePermute, "moe.unpermute.bwd", rows,
             (rows + static_cast<double>(T * h)) * kBf16, {T * k * h, 0, 0, 0});
  ep_all_to_all("moe.combine.bwd.a2a", rows * kBf16 * load, false);
  expert_gemm("moe.expert.fc2.dgrad", routed, d_.fm, h, false);
  expert_gemm("moe.expert.fc2.wgrad", h, d_.fm, routed, true);
  activation("moe.expert", routed * d_.fm, true);
  expert_gemm("moe.expert.fc1.dgrad", routed, h, d_.fc1m, false);
  expert_gemm("moe.expert.fc1.wgrad", d_.fc1m, h, routed, true);
  // the dispatch's gradient: its all-to-all runs while the shared experts' backward computes
  const uint32_t back = ep_all_to_all("moe.dispatch.bwd.a2a", rows * kBf16 * load, true, /*overlapped=*/true);
  shared_experts(true);
  b_.wait_before_next_compute(back);
  b_.compute(OpKind::Elementwise, Kernel::MoePermute, "moe.permute.bwd", rows, 2 * rows * kBf16, {T * k * h, 0, 0, 0});
  b_.compute(OpKind::Elementwise, Kernel::MoeRouting, "moe.route.bwd", 4.0 * static_cast<double>(T * E),
             static_cast<double>(T * E) * 2 * kFp32, {T * E, E, k, 0});
  gemm("moe.router.dgrad", T, h, E);
  wgrad("moe.router.wgrad", E, h, T);
  b_.wait_before_next_compute(shared_pending_); // the input gradient sums all three paths
  shared_pending_.clear();
}

} // namespace twinscale::schedules::detail
