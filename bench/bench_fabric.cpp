// This benchmark shows how long it takes to build and analyse the MegaScale fabric at
// 12,288 GPUs (target ≤ 2 s, ≤ 1 GiB), and what one route() call costs.
// Usage: bench_fabric [GPUS]   (default 12288; the preset is megascale-ampere)
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/measure.hpp"
#include "config/cluster_file.hpp"
#include "topology/analysis.hpp"
#include "topology/ecmp_analysis.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

using namespace twinscale;

namespace {
int run(int argc, char** argv) {
  const int64_t gpus = argc > 1 ? std::atoll(argv[1]) : 12288;
  if (gpus <= 0) throw std::invalid_argument(std::string("GPUS '") + argv[1] + "': a positive count");
  topology::ClusterSpec spec = config::load_cluster("megascale-ampere");
  spec.gpus = gpus;

  bench::Stopwatch total;
  bench::Stopwatch build_clock;
  const topology::Fabric fabric(spec);
  const double build_s = build_clock.seconds();
  bench::Stopwatch analyse_clock;
  const topology::FabricAnalysis a = topology::analyze(fabric);
  const double analyse_s = analyse_clock.seconds();
  bench::report("fabric.build_s", build_s, "s");
  bench::report("fabric.analyse_s", analyse_s, "s");
  bench::report("fabric.build_and_analyse_s", total.seconds(), "s");
  bench::report("fabric.vertices", static_cast<double>(fabric.vertices().size()), "");
  bench::report("fabric.links", static_cast<double>(fabric.links().size()), "");
  bench::report("fabric.switches", static_cast<double>(a.switches), "");
  bench::report("fabric.peak_rss_after_build", bench::peak_rss_mib(), "MiB");

  // 1 M route() calls between pseudo-random GPU pairs (mostly cross-pod/rail: 8 hops).
  constexpr int64_t kRoutes = 1'000'000;
  std::vector<topology::Hop> path;
  path.reserve(16);
  uint64_t x = 0x9e3779b97f4a7c15ULL, checksum = 0;
  bench::Stopwatch route_clock;
  for (int64_t i = 0; i < kRoutes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    const auto src = static_cast<int64_t>(x % static_cast<uint64_t>(gpus));
    const auto dst = static_cast<int64_t>((x >> 32) % static_cast<uint64_t>(gpus));
    fabric.route(src, dst, static_cast<uint64_t>(i), 1, topology::EcmpPolicy::Hash, path);
    checksum += path.size() + (path.empty() ? 0 : path[path.size() / 2].link);
  }
  const double route_s = route_clock.seconds();
  bench::report("route.1M_calls_s", route_s, "s");
  bench::report("route.ns_per_call", route_s / kRoutes * 1e9, "ns");

  // ECMP analysis of one DP ring step of a whole-cluster job.
  const topology::JobShape job{8, gpus / 64, 8};
  bench::Stopwatch ecmp_clock;
  const auto flows =
      topology::dp_ring_flows(job, topology::place(fabric, job, topology::PlacementPolicy::Random, 1), 1e6);
  const auto rep = topology::analyze_ecmp(fabric, flows, topology::EcmpPolicy::Hash, 1);
  bench::report("ecmp.dp_ring_random_placement_s", ecmp_clock.seconds(), "s");
  bench::report("ecmp.worst_collision_factor", rep.worst_collision_factor, "");
  bench::report("peak_rss", bench::peak_rss_mib(), "MiB");
  std::fprintf(stderr, "checksum %llu\n", static_cast<unsigned long long>(checksum));
  return 0;
}
} // namespace

int main(int argc, char** argv) {
  return twinscale::bench::guarded_main(argc, argv, "[GPUS]   (default 12288; the cluster is megascale-ampere)",
                                        [&] { return run(argc, argv); });
}
