// The seam between the executor (stream semantics, collectives, p2p matching) and the
// engine that advances time: the analytic event queue or SimGrid. The executor decides
// *what* runs; a backend decides *when* it finishes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

/// One network flow of a communication task.
struct FlowSpec {
  int64_t src_gpu = 0;
  int64_t dst_gpu = 0;
  uint32_t channel = 0; // NCCL channel = queue pair: part of the ECMP hash
  double bytes = 0;
  double delay_s = 0; // waited before sending (restored step latencies)
  int32_t after = -1; // flow of the same task that must complete first (explicit steps)
};

/// A communication op's transfer: either a closed-form duration or flows. Flows of
/// phase p+1 start once every flow of phase p has completed.
struct CommTask {
  double closed_form_s = -1; // ≥ 0: completes after this long, no flows
  std::vector<FlowSpec> flows;
  std::vector<uint32_t> phase_begin; // first flow of each phase (empty: one phase)
};

/// What a backend reports back to the executor.
class CompletionListener {
public:
  virtual ~CompletionListener() = default;
  virtual void on_compute_done(int32_t slot, uint32_t op) = 0;
  /// failed: a flow of the task failed (link down past the retransmit limit…);
  /// stalled_s: time its flows made no progress because of an outage.
  virtual void on_comm_done(uint32_t comm_id, bool failed, double stalled_s) = 0;
  /// A fault stopped the job (a server crashed): no op is issued any more.
  virtual void on_job_fault(const std::string& why) = 0;
  /// The next event is likely a completion on `slot`: a hint to start loading its state
  /// (at every-rank scale each event's state is a cache miss; the hint overlaps it with
  /// the current event).
  virtual void prefetch(int32_t /*slot*/) const {}
};

class TimeEngine {
public:
  virtual ~TimeEngine() = default;
  virtual double now() const = 0;
  /// Runs `seconds` of nominal compute for op `op` of executed rank `slot`. Compute ops
  /// running at once on one GPU (kernels of different streams) share it equally.
  virtual void start_compute(int32_t slot, uint32_t op, double seconds) = 0;
  /// The CTAs of the communication kernels of `slot` now moving data (0: none; compute
  /// slows down meanwhile, SimOptions::comm_rate_factors).
  virtual void set_comm_ctas(int32_t slot, int32_t ctas) = 0;
  virtual void start_comm(uint32_t comm_id, CommTask task) = 0;
  /// Calls `start` at time 0, then advances time until nothing is left to run.
  virtual void run(const std::function<void()>& start) = 0;
  virtual int64_t flows_started() const { return 0; }
  /// SimOptions::link_loads (flow mode): what each link direction carried; empty otherwise.
  virtual std::vector<LinkLoad> link_loads() const { return {}; }
};

} // namespace twinscale::sim::detail
