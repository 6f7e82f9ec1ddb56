#include "topology/multi_placement.hpp"

#include <algorithm>
#include <string>

#include "topology/detail/hash.hpp"

namespace twinscale::topology {

namespace {

std::string job_text(size_t j, const JobRequest& r) {
  return "job " + std::to_string(j) + " (" + std::to_string(r.gpus) + " GPUs)";
}

} // namespace

std::vector<std::vector<int64_t>> place_jobs(const Fabric& fabric, const std::vector<JobRequest>& jobs) {
  const ClosShape& s = fabric.shape();
  const int64_t gps = s.gpus_per_server;
  const int64_t servers = fabric.servers();
  std::vector<int32_t> owner(static_cast<size_t>(servers), -1);       // job holding each server
  std::vector<int32_t> group_owner(static_cast<size_t>(servers), -1); // by group: -1 free, -2 shared
  auto touch_group = [&](int64_t server, int32_t job) {
    auto& g = group_owner[static_cast<size_t>(fabric.group_of_server(server))];
    g = (g == -1 || g == job) ? job : -2;
  };
  std::vector<std::vector<int64_t>> out;
  for (size_t j = 0; j < jobs.size(); ++j) {
    const JobRequest& r = jobs[j];
    const auto job = static_cast<int32_t>(j);
    if (r.gpus <= 0 || r.gpus % gps != 0)
      throw TopologyError(job_text(j, r) + ": jobs on a shared fabric take whole servers; give a multiple of " +
                          std::to_string(gps) + " GPUs");
    const int64_t need = r.gpus / gps;
    std::vector<int64_t> candidates;
    for (int64_t v = 0; v < servers; ++v) {
      if (owner[static_cast<size_t>(v)] != -1) continue;
      if (r.policy == PlacementPolicy::TorAware && group_owner[static_cast<size_t>(fabric.group_of_server(v))] != -1)
        continue;
      candidates.push_back(v);
    }
    if (r.policy == PlacementPolicy::Random) {
      detail::SplitMix rng(r.seed ^ 0x3b0b5e7a11c0ffeeULL);
      for (size_t i = candidates.size(); i > 1; --i) std::swap(candidates[i - 1], candidates[rng.below(i)]);
    }
    if (static_cast<int64_t>(candidates.size()) < need)
      throw TopologyError(job_text(j, r) + ": needs " + std::to_string(need) + " servers, " +
                          std::to_string(candidates.size()) + " are free" +
                          (r.policy == PlacementPolicy::TorAware ? " in ToR groups no other job uses" : "") +
                          " (the fabric has " + std::to_string(servers) + ")");
    std::vector<int64_t> gpu_of_rank(static_cast<size_t>(r.gpus));
    for (int64_t k = 0; k < need; ++k) {
      const int64_t v = candidates[static_cast<size_t>(k)];
      owner[static_cast<size_t>(v)] = job;
      for (int64_t g = 0; g < gps; ++g) gpu_of_rank[static_cast<size_t>(k * gps + g)] = v * gps + g;
    }
    for (int64_t k = 0; k < need; ++k) touch_group(candidates[static_cast<size_t>(k)], job);
    out.push_back(std::move(gpu_of_rank));
  }
  return out;
}

} // namespace twinscale::topology
