// Private: how unevenly a MoE layer's tokens land on the expert-parallel ranks.
#pragma once

#include <cstdint>

#include "schedules/job.hpp"

namespace twinscale::schedules::detail {

/// Tokens that the busiest EP rank's experts process in one MoE layer, relative to an
/// even spread (tokens·top_k/ep per rank): 1 when balanced. Expert popularities are drawn
/// for (iteration, micro-batch, layer) from the model's routing distribution and seed;
/// each EP rank holds experts/ep consecutive experts; with a capacity factor c an expert
/// keeps at most c/experts of the routed tokens (the rest are dropped). Deterministic:
/// its own generator (splitmix64, Box–Muller, Marsaglia–Tsang), no standard-library
/// distribution whose output varies between implementations.
double hottest_rank_load(const ModelSpec& model, int64_t ep, int64_t iteration, int64_t micro_batch, int64_t layer);

/// NVLink domains (blocks of `ep_node` consecutive EP ranks) a token's top_k experts
/// span on average, from the same draw as hottest_rank_load: Σ over domains of
/// 1 − (1 − share)^top_k (top-k picks approximated as independent draws from the
/// popularities), at most `max_domains` (node-limited routing; 0 = no limit) and ≥ 1.
double mean_token_domains(const ModelSpec& model, int64_t ep, int64_t ep_node, int64_t max_domains, int64_t iteration,
                          int64_t micro_batch, int64_t layer);

} // namespace twinscale::schedules::detail
