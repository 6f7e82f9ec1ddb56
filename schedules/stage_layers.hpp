// Which layers a virtual pipeline stage holds: layers/(pp·vpp) each, or, with
// parallel.first_stage_layers / last_stage_layers, those on the first / last virtual
// stage and the rest split evenly over the virtual stages between (Llama 3 405B: 126
// layers on 16·4 virtual stages, 1 on the first and the last, 2 on the others).
#pragma once

#include <cstdint>

#include "schedules/job.hpp"

namespace twinscale::schedules {

struct LayerRange {
  int64_t first = 0; // global index of the stage's first layer
  int64_t count = 0;
};

/// Layers of virtual stage `vs` (= chunk·pp + pp rank). Assumes a job check_job accepts.
inline LayerRange stage_layers(const JobSpec& job, int64_t vs) {
  const auto& p = job.parallel;
  const int64_t stages = p.pp * p.vpp;
  const int64_t head = p.first_stage_layers, tail = p.last_stage_layers;
  if (head == 0 && tail == 0) {
    const int64_t each = job.model.layers / stages;
    return {vs * each, each};
  }
  const int64_t middle = stages - (head > 0 ? 1 : 0) - (tail > 0 ? 1 : 0);
  const int64_t each = middle > 0 ? (job.model.layers - head - tail) / middle : 0;
  if (head > 0 && vs == 0) return {0, head};
  if (tail > 0 && vs == stages - 1) return {job.model.layers - tail, tail};
  const int64_t before = head > 0 ? head + (vs - 1) * each : vs * each;
  return {before, each};
}

/// The most layers any virtual stage holds.
inline int64_t max_stage_layers(const JobSpec& job) {
  int64_t most = 0;
  for (int64_t vs = 0; vs < job.parallel.pp * job.parallel.vpp; ++vs) {
    const int64_t n = stage_layers(job, vs).count;
    most = n > most ? n : most;
  }
  return most;
}

} // namespace twinscale::schedules
