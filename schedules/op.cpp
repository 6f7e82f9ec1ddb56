#include "schedules/op.hpp"

#include "schedules/error.hpp"

namespace twinscale::schedules {

std::string_view to_string(OpKind k) {
  switch (k) {
  case OpKind::Gemm: return "gemm";
  case OpKind::Attention: return "attention";
  case OpKind::Elementwise: return "elementwise";
  case OpKind::OptimizerStep: return "optimizer_step";
  case OpKind::AllGather: return "all_gather";
  case OpKind::ReduceScatter: return "reduce_scatter";
  case OpKind::AllReduce: return "all_reduce";
  case OpKind::AllToAll: return "all_to_all";
  case OpKind::Broadcast: return "broadcast";
  case OpKind::Send: return "send";
  case OpKind::Recv: return "recv";
  }
  TWINSCALE_ASSERT(false, "unknown OpKind");
}

std::string_view to_string(Kernel k) {
  switch (k) {
  case Kernel::None: return "none";
  case Kernel::Gemm: return "gemm";
  case Kernel::AttentionUnfused: return "attention_unfused";
  case Kernel::FlashAttention2: return "flash_attention2";
  case Kernel::LayerNorm: return "layernorm";
  case Kernel::FusedLayerNorm: return "fused_layernorm";
  case Kernel::Gelu: return "gelu";
  case Kernel::FusedBiasGelu: return "fused_bias_gelu";
  case Kernel::Dropout: return "dropout";
  case Kernel::ResidualAdd: return "residual_add";
  case Kernel::AdamStep: return "adam_step";
  case Kernel::LambStep: return "lamb_step";
  case Kernel::Embedding: return "embedding";
  case Kernel::CrossEntropy: return "cross_entropy";
  case Kernel::DataLoad: return "data_load";
  case Kernel::RmsNorm: return "rmsnorm";
  case Kernel::MoeRouting: return "moe_routing";
  case Kernel::MoePermute: return "moe_permute";
  case Kernel::Fp8Cast: return "fp8_cast";
  case Kernel::Rope: return "rope";
  case Kernel::Copy: return "copy";
  case Kernel::CudnnAttention: return "cudnn_attention";
  }
  TWINSCALE_ASSERT(false, "unknown Kernel");
}

std::string_view to_string(Stream s) {
  switch (s) {
  case Stream::Compute: return "compute";
  case Stream::TpComm: return "tp_comm";
  case Stream::DpComm: return "dp_comm";
  case Stream::PpSend: return "pp_send";
  case Stream::PpRecv: return "pp_recv";
  case Stream::Data: return "data";
  case Stream::CpSend: return "cp_send";
  case Stream::CpRecv: return "cp_recv";
  }
  TWINSCALE_ASSERT(false, "unknown Stream");
}

std::string_view to_string(Phase p) {
  switch (p) {
  case Phase::Forward: return "fwd";
  case Phase::Backward: return "bwd";
  case Phase::Optimizer: return "opt";
  case Phase::Recompute: return "recompute";
  case Phase::Data: return "data";
  }
  TWINSCALE_ASSERT(false, "unknown Phase");
}

std::string_view to_string(GroupKind g) {
  switch (g) {
  case GroupKind::Tp: return "tp";
  case GroupKind::Dp: return "dp";
  case GroupKind::Pp: return "pp";
  case GroupKind::Embedding: return "embedding";
  case GroupKind::Ep: return "ep";
  case GroupKind::Cp: return "cp";
  case GroupKind::ExpertDp: return "edp";
  case GroupKind::EpNode: return "ep_node";
  case GroupKind::EpRail: return "ep_rail";
  case GroupKind::World: return "world";
  }
  TWINSCALE_ASSERT(false, "unknown GroupKind");
}

std::string_view to_string(DType d) {
  switch (d) {
  case DType::BF16: return "bf16";
  case DType::FP32: return "fp32";
  case DType::FP8: return "fp8";
  }
  TWINSCALE_ASSERT(false, "unknown DType");
}

namespace {
template <class E>
std::optional<E> parse(std::string_view text, int count) {
  for (int i = 0; i < count; ++i)
    if (to_string(static_cast<E>(i)) == text) return static_cast<E>(i);
  return std::nullopt;
}
} // namespace

std::optional<OpKind> op_kind_from_string(std::string_view s) {
  return parse<OpKind>(s, static_cast<int>(OpKind::Recv) + 1);
}
std::optional<Kernel> kernel_from_string(std::string_view s) {
  return parse<Kernel>(s, static_cast<int>(kLastKernel) + 1);
}
std::optional<Stream> stream_from_string(std::string_view s) { return parse<Stream>(s, kStreamCount); }
std::optional<Phase> phase_from_string(std::string_view s) {
  return parse<Phase>(s, static_cast<int>(Phase::Data) + 1);
}
std::optional<GroupKind> group_kind_from_string(std::string_view s) { return parse<GroupKind>(s, kGroupKindCount); }
std::optional<DType> dtype_from_string(std::string_view s) { return parse<DType>(s, static_cast<int>(DType::FP8) + 1); }

} // namespace twinscale::schedules
