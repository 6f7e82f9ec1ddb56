// Megatron-LM's exchange flags of the interleaved schedule (see the header), from
// megatron/schedules.py forward_backward_pipelining_with_interleaving of the SC'21
// version (Megatron-LM@6985e58938) — the same rules through the 2023 versions.
#include "schedules/detail/megatron_exchange.hpp"

#include "schedules/error.hpp"
#include "schedules/pipeline.hpp"

namespace twinscale::schedules::detail {

namespace {

int64_t python_mod(int64_t a, int64_t m) { return ((a % m) + m) % m; }

/// get_model_chunk_id: micro-batch id k (any integer, Python modulo) → model chunk.
int64_t chunk_id(int64_t k, bool forward, int64_t pp, int64_t vpp) {
  const int64_t c = python_mod(k, pp * vpp) / pp;
  return forward ? c : vpp - 1 - c;
}

} // namespace

MegatronExchange megatron_exchange_after(int64_t pp, int64_t vpp, int64_t micro_batches, int64_t rank, int64_t j) {
  const int64_t total = micro_batches * vpp;
  const int64_t warmup = pipeline_warmup(PipelineKind::Interleaved, pp, vpp, micro_batches, rank);
  const int64_t remaining = total - warmup;
  const bool first = rank == 0, last = rank == pp - 1;
  TWINSCALE_ASSERT(j >= 0 && j < 2 * total, "exchange step out of range");
  MegatronExchange e;
  e.after = true;
  if (j < warmup) { // warm-up forward k = j
    const int64_t k = j;
    e.recv_prev = !(first && chunk_id(k + 1, true, pp, vpp) == 0) && k != total - 1;
    // the last warm-up forward also receives the first backward's gradient (with all
    // warm-up, M = P, that is the cool-down's recv_backward()); the last rank's last
    // virtual stage computes the loss and receives none
    if (k == warmup - 1) e.recv_next = !last;
    return e;
  }
  if (j < warmup + 2 * remaining) { // steady state: forward k + warm-up, then backward k
    if ((j - warmup) % 2 == 0) return MegatronExchange{};
    const int64_t k = (j - warmup) / 2;
    const int64_t forward_k = k + warmup;
    e.recv_prev = !(first && chunk_id(forward_k - (pp - 1), true, pp, vpp) == vpp - 1);
    e.recv_next = !(last && chunk_id(k - (pp - 1), false, pp, vpp) == 0);
    if (k == remaining - 1) e.recv_prev = false;
    return e;
  }
  const int64_t k = remaining + (j - warmup - 2 * remaining); // cool-down backward k
  e.recv_next = !(last && chunk_id(k + 1, false, pp, vpp) == vpp - 1) && k != total - 1;
  return e;
}

} // namespace twinscale::schedules::detail
