// Per-GPU compute speed factors (sim::SimOptions::gpu_speed) from a seeded distribution
// or a file, for runs that execute every rank (stragglers, per-GPU variation, a slow
// host).
//
// Distribution spec (--gpu-speed-dist), factors drawn per GPU in GPU order from a
// SplitMix64 stream seeded by `seed` (same seed → same factors on every platform):
//   normal:SIGMA           1 + SIGMA·N(0,1) (Box–Muller), clamped to [0.05, 2]
//   uniform:LO:HI          uniform in [LO, HI)
//   lognormal:SIGMA        exp(SIGMA·N(0,1))
// File (--gpu-speed-file): CSV lines `scope,index,factor` with scope `rank` (a rank of
// the job: the GPU it is placed on), `gpu` (a fabric GPU) or `server` (every GPU of that
// server); '#' starts a comment, an optional header line `scope,index,factor`. Factors
// of entries that hit one GPU multiply (a slow host holding a slow GPU); GPUs not named
// run at 1.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "topology/fabric.hpp"

namespace twinscale::config {

/// Factors for `gpus` GPUs; throws ConfigError naming the spec and what is valid.
std::vector<double> draw_gpu_speeds(const std::string& spec, int64_t gpus, uint64_t seed);

/// Factors per fabric GPU from `path`; throws ConfigError naming file, line and entry.
std::vector<double> read_gpu_speed_file(const std::string& path, const topology::Fabric& fabric,
                                        const std::vector<int64_t>& gpu_of_rank);

/// The same, from text (`source` names it in errors).
std::vector<double> parse_gpu_speeds(const std::string& text, const std::string& source, const topology::Fabric& fabric,
                                     const std::vector<int64_t>& gpu_of_rank);

} // namespace twinscale::config
