// ZB-H1's W pass (Qi et al., ICLR'24, §2: "B" computes the input gradient, "W" the
// weight gradient): the weight-gradient GEMMs a backward pass left out
// (LayerEmitter::set_split_backward), in the order layer_backward issues them, each after
// the TP all-gather of its input under sequence parallelism. The norms' small weight
// gradients stay in the B pass, as in the paper's implementation.
#include "schedules/detail/layer_ops.hpp"

namespace twinscale::schedules::detail {

namespace {
constexpr double kBf16 = 2;
} // namespace

void LayerEmitter::layer_weight_gradients() {
  const int64_t m = d_.tokens;
  const int64_t h = d_.h;
  const int64_t t = d_.t;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(h) * kBf16;
  const bool split = defer_wgrad_;
  defer_wgrad_ = false;
  // both gathers are issued up front, so that they run while fc2's and proj's GEMMs compute
  const uint32_t before = b_.last_compute();
  auto gather_input = [&](const std::string& name) -> uint32_t {
    if (!d_.sp) return kNoOp;
    return tp_collective(OpKind::AllGather, name, act_bytes * gather_scale("attn.qkv"),
                         {before}); // FP8: the saved shard
  };
  const uint32_t ag_fc1 = gather_input(parallel_block_ ? "ln.wgrad.ag" : "mlp.fc1.wgrad.ag");
  const uint32_t ag_qkv = parallel_block_ ? kNoOp : gather_input("attn.qkv.wgrad.ag");
  wgrad("mlp.fc2.wgrad", h, d_.f / t, m);
  wgrad("mlp.fc1.wgrad", d_.fc1 / t, h, m, {ag_fc1});
  wgrad("attn.proj.wgrad", h, h / t, m);
  wgrad("attn.qkv.wgrad", d_.qkv / t, h, m, {ag_qkv});
  defer_wgrad_ = split;
}

void LayerEmitter::head_weight_gradients() {
  const int64_t m = d_.tokens;
  const double act_bytes = static_cast<double>(m) * static_cast<double>(d_.h) * kBf16;
  const bool split = defer_wgrad_;
  defer_wgrad_ = false;
  const uint32_t ag =
      d_.sp ? tp_collective(OpKind::AllGather, "lm_head.wgrad.ag", act_bytes, {b_.last_compute()}) : kNoOp;
  wgrad("lm_head.wgrad", d_.vocab / d_.t, d_.h, m, {ag});
  defer_wgrad_ = split;
}

} // namespace twinscale::schedules::detail
