// Per-GPU speed variation as order statistics of the synchronous job.
//
// GPUs of one SKU do not run at one speed: power management and manufacturing spread
// their kernel times (Sinha et al., SC'22: ~8 % across the A100s of a cluster). Each GPU
// g gets a time multiplier x_g = 1 + σ·z_g, z_g standard normal drawn per seed (σ =
// speed_sigma of the GPU's catalogue entry). A synchronous job waits for its slowest
// member: a TP group synchronises every layer, a 1F1B pipeline in steady state runs at the
// pace of its slowest stage, and the DP collective joins the replicas every iteration. So
// the executed pipeline's compute is scaled by the job's largest multiplier, max_g x_g,
// whose expectation grows with the number of GPUs (≈ 1 + 2σ at 32 GPUs, 1 + 3.4σ at
// 3,072) — the cost of scale the symmetric (aggregated) simulation cannot see otherwise.
//
// Slow hosts: optionally each server is, independently with probability `fraction` (drawn
// per seed after the GPUs), a slow host whose GPUs all take `factor` × as long (a host
// with a throttled power supply, a hot aisle, a degraded PCIe switch); the job then waits
// for max_g x_g · (factor if g's host is slow else 1).
//
// Applied to the aggregated execution, where one pipeline stands for all; what it leaves
// out: a slow GPU only partly delays work that does not synchronise with it (e.g. the
// bubble of other stages).
#pragma once

#include <cstdint>

namespace twinscale::sim {

/// The largest of `gpus` draws 1 + sigma·z (z standard normal, Box–Muller on a SplitMix64
/// stream of `seed`: identical on every platform); 1 when sigma = 0. Each draw is kept
/// ≥ 1 − 4σ.
double slowest_gpu_factor(int64_t gpus, double sigma, uint64_t seed);

/// A fraction of the hosts runs `factor` × slower (see above).
struct SlowHosts {
  double fraction = 0;       // probability that a host is slow, in [0, 1]
  double factor = 1;         // time multiplier of a slow host's GPUs, ≥ 1
  int64_t gpus_per_host = 8; // GPUs of one host (the cluster's server)
};

/// slowest_gpu_factor with slow hosts: the largest x_g · (factor if g's host is slow).
/// The GPU draws are those of slowest_gpu_factor (same seed, same values); the hosts'
/// draws follow on the same stream. Throws SimError for a fraction outside [0, 1], a
/// factor < 1 or gpus_per_host < 1.
double slowest_gpu_factor(int64_t gpus, double sigma, uint64_t seed, const SlowHosts& slow);

} // namespace twinscale::sim
