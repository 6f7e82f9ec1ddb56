// This benchmark splits one analytic evaluation of a job (default gpt-175b-megascale at
// 12,288 GPUs, as `twinscale simulate --mode analytic` runs it) into its steps: the job
// preset, the cluster (catalogue and TOML), the fabric, the lowering, the placement and
// the simulation, each repeated --repeat times (the median is printed), then the whole
// scenario (config::Scenario + simulate) as a sweep point pays it. Each step prints its
// median wall seconds and, as `.cpu`, its median CPU seconds (this process's: on a loaded
// machine the steadier figure).
//
//   bench_analytic [--preset NAME] [--gpus N] [--repeat R]
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "bench/measure.hpp"
#include "config/cluster_file.hpp"
#include "config/hardware_catalogue.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

using namespace twinscale;

namespace {

double cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

struct Timing {
  double wall = 0, cpu = 0; // medians
};

/// Median wall and CPU seconds of `repeat` calls of `step`.
Timing median_seconds(int repeat, const std::function<void()>& step) {
  std::vector<double> wall, cpu;
  for (int i = 0; i < repeat; ++i) {
    bench::Stopwatch sw;
    const double c0 = cpu_seconds();
    step();
    cpu.push_back(cpu_seconds() - c0);
    wall.push_back(sw.seconds());
  }
  std::sort(wall.begin(), wall.end());
  std::sort(cpu.begin(), cpu.end());
  return {wall[wall.size() / 2], cpu[cpu.size() / 2]};
}

} // namespace

int main(int argc, char** argv) {
  std::string preset = "gpt-175b-megascale";
  int64_t gpus = 12288;
  int repeat = 5;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--preset") && i + 1 < argc)
      preset = argv[++i];
    else if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc)
      gpus = std::stoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--repeat") && i + 1 < argc)
      repeat = std::max(1, std::stoi(argv[++i]));
    else {
      std::fprintf(stderr, "usage: bench_analytic [--preset NAME] [--gpus N] [--repeat R]\n");
      return 2;
    }
  }
  bench::Stopwatch first;
  config::hardware_catalogue(); // parsed once per process
  bench::report("analytic.catalogue_first", first.seconds(), "s");

  schedules::JobSpec job;
  const Timing t_job = median_seconds(repeat, [&] {
    job = config::load_job_preset(preset);
    config::apply_overrides(job, gpus, std::nullopt);
  });
  topology::ClusterSpec cluster;
  const Timing t_cluster = median_seconds(repeat, [&] {
    cluster = config::load_cluster(job.cluster);
    cluster.gpus = job.parallel.gpus();
  });
  std::optional<topology::Fabric> fabric;
  const Timing t_fabric = median_seconds(repeat, [&] { fabric.emplace(cluster); });
  schedules::Schedule schedule;
  const Timing t_lower = median_seconds(repeat, [&] {
    schedules::LoweringTarget target;
    target.gpu_memory_bytes = cluster.gpu.memory_bytes;
    schedule = schedules::lower(job, target);
  });
  std::vector<int64_t> gpu_of_rank;
  const Timing t_place = median_seconds(repeat, [&] {
    gpu_of_rank = topology::place(*fabric, {schedule.layout.tp, schedule.layout.dp, schedule.layout.pp},
                                  topology::PlacementPolicy::Linear, 1);
  });
  sim::SimOptions options;
  options.mode = sim::SimMode::Analytic;
  options.network = config::load_cluster_network(job.cluster);
  double iteration = 0;
  const Timing t_sim = median_seconds(
      repeat, [&] { iteration = sim::simulate(schedule, *fabric, gpu_of_rank, options).iteration_time_s; });
  const Timing t_scenario = median_seconds(repeat, [&] {
    config::ScenarioSpec spec;
    spec.job = job;
    spec.sim.mode = sim::SimMode::Analytic;
    const config::Scenario scenario(spec);
    iteration = scenario.simulate().iteration_time_s;
  });
  const std::string p = "analytic." + preset + "." + std::to_string(gpus) + "gpus.";
  const std::pair<const char*, Timing> steps[] = {{"job_preset", t_job},
                                                  {"cluster", t_cluster},
                                                  {"fabric", t_fabric},
                                                  {"lower", t_lower},
                                                  {"place", t_place},
                                                  {"simulate", t_sim},
                                                  {"scenario_and_simulate", t_scenario}};
  for (const auto& [name, t] : steps) {
    bench::report((p + name).c_str(), t.wall, "s");
    bench::report((p + name + ".cpu").c_str(), t.cpu, "s");
  }
  bench::report((p + "iteration_time").c_str(), iteration, "s");
  bench::report((p + "ops").c_str(), static_cast<double>(schedule.programs.empty() ? 0 : [&] {
                  size_t n = 0;
                  for (const auto& prog : schedule.programs) n += prog.ops.size();
                  return n;
                }()),
                "");
  bench::report("analytic.peak_rss", bench::peak_rss_mib(), "MiB");
  return 0;
}
