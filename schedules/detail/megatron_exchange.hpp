#pragma once
// Megatron-LM's interleaved pipeline without overlapped p2p (the schedule of
// forward_backward_pipelining_with_interleaving before overlap_p2p_comm: SC'21 and the
// 2022/2023 versions): every transfer is part of a blocking exchange
// (p2p_communication._communicate: torch.distributed.batch_isend_irecv, then wait on all
// of it) posted after a pass:
//  - warm-up forward k: send its output, receive the next forward's input
//    (send_forward_recv_forward); the last warm-up forward also receives the first
//    backward's gradient (send_forward_backward_recv_forward_backward);
//  - steady state, forward k + warm-up then backward k, then ONE exchange: the forward's
//    output and the backward's input gradient are sent together after the backward, and
//    the next forward's input and the next backward's gradient are received;
//  - cool-down backward k: send its gradient, receive the next backward's
//    (send_backward_recv_backward).
// Whether each exchange receives from the previous / next rank follows Megatron's
// recv_prev / recv_next rules (the first stage is ahead of the last by P − 1 passes);
// a receive takes the next message in the sender's order.
#include <cstdint>

namespace twinscale::schedules::detail {

struct MegatronExchange {
  bool after = false;     // an exchange follows this pass (false: a steady-state forward)
  bool recv_prev = false; // receive the next message from rank − 1 (wrapping)
  bool recv_next = false; // receive the next message from rank + 1 (wrapping)
};

/// The exchange after step j of rank `rank`'s interleaved order (pipeline_order with
/// PipelineKind::Interleaved; total = micro_batches · vpp steps each way).
MegatronExchange megatron_exchange_after(int64_t pp, int64_t vpp, int64_t micro_batches, int64_t rank, int64_t j);

} // namespace twinscale::schedules::detail
