// This benchmark shows how long one simulated GPT-175B iteration (gpt-175b-megascale,
// megascale-ampere) takes to compute, in the analytic and the flow mode, from 256 to
// 12,288 GPUs (strong scaling as in the MegaScale paper: global batch 768 below 3,072
// GPUs, 6,144 from 3,072 on). Prints wall time and peak RSS (the flow mode runs in a
// forked child: its RSS is the children's peak) plus the simulated figures.
//
//   bench_sim [--gpus N]... [--mode analytic|flow|both] [--cluster NAME|FILE]
// (--cluster: another cluster, e.g. one whose [network] table turns congestion control on)
#include <sys/resource.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "bench/measure.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"
#include "sim/simulate.hpp"

using namespace twinscale;

namespace {

double children_peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;
}

} // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> sizes;
  std::string modes = "both";
  std::string cluster = "megascale-ampere";
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--gpus") && i + 1 < argc)
      sizes.push_back(std::stoll(argv[++i]));
    else if (!std::strcmp(argv[i], "--mode") && i + 1 < argc)
      modes = argv[++i];
    else if (!std::strcmp(argv[i], "--cluster") && i + 1 < argc)
      cluster = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_sim [--gpus N]... [--mode analytic|flow|both] [--cluster NAME|FILE]\n");
      return 2;
    }
  }
  if (sizes.empty()) sizes = {256, 1024, 3072, 12288};
  for (int64_t gpus : sizes) {
    bench::Stopwatch setup;
    config::ScenarioSpec spec;
    spec.job = config::load_job_preset("gpt-175b-megascale");
    config::apply_overrides(spec.job, gpus, gpus < 3072 ? 768 : 6144);
    spec.cluster = cluster;
    config::Scenario scenario(spec);
    const std::string tag = std::to_string(gpus) + "gpus";
    bench::report(("sim." + tag + ".setup_wall").c_str(), setup.seconds(), "s");
    for (const char* m : {"analytic", "flow"}) {
      if (modes != "both" && modes != m) continue;
      scenario.set_mode(config::parse_sim_mode(m, "--mode"));
      bench::Stopwatch sw;
      const auto r = scenario.simulate();
      const double wall = sw.seconds();
      const std::string p = "sim." + tag + "." + m;
      bench::report((p + ".wall").c_str(), wall, "s");
      bench::report((p + ".iteration_time").c_str(), r.iteration_time_s, "s");
      bench::report((p + ".mfu").c_str(), r.mfu, "");
      bench::report((p + ".flows").c_str(), static_cast<double>(r.flows), "");
      bench::report((p + ".ops").c_str(), static_cast<double>(r.ops_executed), "");
      if (r.mode == sim::SimMode::Flow) bench::report((p + ".child_peak_rss").c_str(), children_peak_rss_mib(), "MiB");
    }
    bench::report(("sim." + tag + ".peak_rss").c_str(), bench::peak_rss_mib(), "MiB");
  }
  return 0;
}
