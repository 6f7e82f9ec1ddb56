#include "faults/checkpoint_policy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "faults/error.hpp"

namespace twinscale::faults {

namespace {
constexpr double kParamBytes = 2;      // BF16 weights
constexpr double kOptimizerBytes = 12; // FP32 master weights + two FP32 moments

std::string fmt_s(double s) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f s", s);
  return buf;
}
} // namespace

double parameter_count(const schedules::ModelSpec& m) {
  const double h = static_cast<double>(m.hidden);
  const double f = static_cast<double>(m.ffn_hidden > 0 ? m.ffn_hidden : 4 * m.hidden);
  const double per_layer = 4 * h * h + 2 * h * f + f + 9 * h;
  return static_cast<double>(m.layers) * per_layer + static_cast<double>(m.vocab) * h +
         static_cast<double>(m.seq_len) * h;
}

CheckpointState checkpoint_state(double parameters, const topology::JobShape& shape, bool zero_sharded,
                                 int64_t gpus_per_node) {
  if (!(parameters > 0)) throw FaultError("checkpoint: the model has no parameters");
  if (shape.tp < 1 || shape.pp < 1 || shape.dp < 1 || gpus_per_node < 1)
    throw FaultError("checkpoint: TP, PP, DP and GPUs per node must be ≥ 1");
  CheckpointState s;
  s.parameters = parameters;
  s.shape = shape;
  s.gpus_per_node = gpus_per_node;
  s.optimizer_sharded = zero_sharded;
  const double shard = parameters / static_cast<double>(shape.tp * shape.pp);
  s.param_bytes_per_gpu = kParamBytes * shard;
  s.optimizer_bytes_per_gpu = kOptimizerBytes * shard / (zero_sharded ? static_cast<double>(shape.dp) : 1.0);
  s.unique_bytes = (kParamBytes + kOptimizerBytes) * parameters;
  return s;
}

CheckpointState checkpoint_state(const schedules::JobSpec& job, int64_t gpus_per_node) {
  const auto& p = job.parallel;
  return checkpoint_state(parameter_count(job.model), topology::JobShape{p.tp, p.dp_cp(), p.pp}, p.zero_stage >= 1,
                          gpus_per_node);
}

CheckpointTimes checkpoint_times(const CheckpointPolicy& policy, const CheckpointState& st,
                                 CheckpointLoadMethod method) {
  const StorageSpec& bw = policy.storage;
  CheckpointTimes t;
  const double per_gpu = st.param_bytes_per_gpu + st.optimizer_bytes_per_gpu;
  const double stage1 = per_gpu / bw.pcie_bw_bytes_per_s;
  const double per_node_unique = st.unique_bytes / st.nodes();
  const double stage2 = std::max(st.unique_bytes / bw.write_bw_bytes_per_s, per_node_unique / bw.client_bw_bytes_per_s);
  if (policy.async_persist) {
    t.blocking_s = stage1;
    t.persist_s = stage2;
  } else {
    t.blocking_s = stage1 + stage2;
    t.persist_s = 0;
  }
  const double gpus = static_cast<double>(st.gpus());
  const double gpn = static_cast<double>(st.gpus_per_node);
  switch (method) {
  case CheckpointLoadMethod::EveryRankReads: {
    const double total = gpus * per_gpu;
    t.load_s = std::max(total / bw.read_bw_bytes_per_s, gpn * per_gpu / bw.client_bw_bytes_per_s);
    break;
  }
  case CheckpointLoadMethod::ReaderPerDpGroup: {
    const double read = std::max(st.unique_bytes / bw.read_bw_bytes_per_s, per_node_unique / bw.client_bw_bytes_per_s);
    // Replicated over the DP group: the parameters, and the optimizer state without ZeRO.
    const double replicated = st.param_bytes_per_gpu + (st.optimizer_sharded ? 0.0 : st.optimizer_bytes_per_gpu);
    const double bcast = st.shape.dp > 1 ? replicated / bw.broadcast_bw_bytes_per_s : 0.0;
    t.load_s = read + bcast;
    break;
  }
  }
  return t;
}

void validate_checkpoint(const CheckpointPolicy& p, const CheckpointTimes& t) {
  const StorageSpec& s = p.storage;
  const std::pair<const char*, double> bws[] = {{"pcie_bw_bytes_per_s", s.pcie_bw_bytes_per_s},
                                                {"write_bw_bytes_per_s", s.write_bw_bytes_per_s},
                                                {"read_bw_bytes_per_s", s.read_bw_bytes_per_s},
                                                {"client_bw_bytes_per_s", s.client_bw_bytes_per_s},
                                                {"broadcast_bw_bytes_per_s", s.broadcast_bw_bytes_per_s}};
  for (auto& [name, v] : bws)
    if (!(v > 0) || !std::isfinite(v))
      throw FaultError(std::string("checkpoint storage: ") + name + " must be a bandwidth > 0 bytes/s");
  if (!(p.interval_s > 0) || !std::isfinite(p.interval_s))
    throw FaultError("checkpoint: interval_s must be > 0 seconds");
  const double needed = t.blocking_s + t.persist_s;
  if (p.interval_s < needed)
    throw FaultError("checkpoint: interval " + fmt_s(p.interval_s) +
                     " is shorter than the checkpoint itself (blocking " + fmt_s(t.blocking_s) + " + persist " +
                     fmt_s(t.persist_s) + "); use an interval ≥ " + fmt_s(needed));
}

} // namespace twinscale::faults
