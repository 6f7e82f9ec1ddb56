// The SMs a collective's kernels take on its members' GPUs while it runs: what the event
// core slows their compute by (SimOptions::comm_rate_factors).
#include "schedules/op.hpp"
#include "sim/collective_algorithms.hpp"
#include "sim/detail/executor.hpp"

namespace twinscale::sim::detail {

/// A collective NCCL runs (the data-parallel ones: the gradient reduce-scatter or
/// all-reduce, the parameter all-gather, FSDP's per-layer ones; and the tensor-parallel
/// ones of a stack without TP overlap, e.g. Megatron's asynchronous all-reduce beside the
/// weight-gradient GEMM) takes the CTAs NCCL plans for its group (nccl_collective_ctas:
/// 16 for a group of all 8 GPUs of DGX A100 servers, 2 for one GPU per server, 24 inside
/// an NVSwitch server). The others keep the channels asked for (SimOptions::channels):
/// the TP overlap of a stack that has one (Transformer Engine's userbuffers run on the
/// copy engines or on the few SMs their configuration names, which no stack fact gives
/// yet; MegaScale's fused GEMM and communication likewise), expert all-to-all, and
/// pipeline and context-parallel transfers, NCCL's point-to-point with 2 channels per
/// peer across servers (NCCL_NCHANNELS_PER_NET_PEER). A job that states Transformer
/// Engine's userbuffers SMs (OverlapSpec::tp_sms_*) gives its TP-overlap collectives those.
int32_t SimExecutor::collective_ctas(const Slot& sl, uint32_t op_index, GroupState& group) const {
  const HotOp& op = sl.hot[op_index];
  const int64_t rank = sl.rank;
  if (sl.tp_sms != nullptr && sl.tp_sms[op_index] >= 0) return sl.tp_sms[op_index];
  const auto stream = static_cast<schedules::Stream>(op.stream);
  const bool nccl =
      stream == schedules::Stream::DpComm || (stream == schedules::Stream::TpComm && !schedule_.job.options.overlap.tp);
  if (!nccl || op.kind == schedules::OpKind::AllToAll) return options_.channels;
  if (group.nccl_ctas < 0) {
    const auto& fabric = paths_.fabric();
    GroupPlacement where;
    for (int64_t m : schedule_.layout.group_members(op.group, rank)) {
      const int64_t gpu = gpu_of_rank_[static_cast<size_t>(m)];
      where.server.push_back(fabric.server_of_gpu(gpu));
      where.nic.push_back(fabric.nic_of_gpu(gpu));
    }
    group.nccl_ctas = static_cast<int16_t>(nccl_collective_ctas(where));
  }
  return group.nccl_ctas;
}

} // namespace twinscale::sim::detail
