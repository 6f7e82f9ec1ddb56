// This benchmark shows what executing every rank costs: GPT-175B in MegaScale's form
// (gpt-175b-megascale on megascale-ampere, strong scaling as bench_sim: global batch
// 768 below 3,072 GPUs, 6,144 from 3,072 on) with every rank executed at its own GPU
// speed drawn from a distribution (SimOptions::every_rank, config/gpu_speeds.hpp).
// Prints wall and CPU seconds (this process and the forked flow-mode child), peak RSS,
// ops executed and CPU nanoseconds per op, the simulated iteration time next to the
// symmetric run's with all speeds equal, and the spread of per-rank compute; writes the
// per-rank times as CSV (sim/per_rank_csv.hpp) when asked, and the binary trace of every
// op event of every rank (`--trace`, what `simulate --every-rank --trace F.tstrace` writes;
// its writer's thread is in the CPU seconds).
//
//   bench_every_rank [--gpus N] [--mode analytic|flow|both] [--dist normal:0.02]
//                    [--seed S] [--per-rank-csv PREFIX] [--no-reference] [--batch B]
//                    [--trace PREFIX] [--slow-gpus N] [--all-ranks] [--hang-rank R [--hang-at-s T]]
//                    [--faults PLAN.toml]
// --batch overrides the global batch (fewer ops: for instruction counts under valgrind).
// --slow-gpus N replaces the drawn speeds by the first GPU of each of the first N servers
// slowed, each by its own factor from 0.9 down (the rest at 1: N distinct slowed
// replicas with the linear placement, for N up to dp): the analytic mode then executes
// one replica of each class of identical replicas, N + 1 of them
// (docs/simulator.md); --all-ranks executes every rank all the same
// (SimOptions::replica_classes off). --hang-rank R stops rank R at T simulated seconds
// (default 2; analytic mode, as `simulate --every-rank --hang-rank`) and times the end
// state of every rank (SimReport::hang_states) with the run; the rank files that
// `--run-dir` writes from it are not written here. --faults PLAN injects a fault plan
// (`simulate --faults`; the analytic mode runs its jitter pauses and degraded links).
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "bench/measure.hpp"
#include "config/gpu_speeds.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"
#include "schedules/schedule.hpp"
#include "sim/per_rank_csv.hpp"
#include "sim/simulate.hpp"
#include "topology/fabric.hpp"

using namespace twinscale;

namespace {

struct Cpu {
  double self_s, children_s, children_rss_mib;
};

Cpu cpu_now() {
  rusage s{}, c{};
  getrusage(RUSAGE_SELF, &s);
  getrusage(RUSAGE_CHILDREN, &c);
  auto sec = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  return {sec(s.ru_utime) + sec(s.ru_stime), sec(c.ru_utime) + sec(c.ru_stime),
          static_cast<double>(c.ru_maxrss) / 1024.0};
}

/// A whole number or a finite one (the whole text, nothing after it); false otherwise.
bool parse(const char* text, int64_t& out) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0) return false;
  out = v;
  return true;
}
bool parse(const char* text, double& out) {
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

int usage() {
  std::fprintf(stderr, "usage: bench_every_rank [--gpus N] [--mode analytic|flow|both] [--dist SPEC] [--seed S] "
                       "[--per-rank-csv PREFIX] [--no-reference] [--batch B] [--trace PREFIX] [--slow-gpus N] "
                       "[--all-ranks] [--hang-rank R [--hang-at-s T]] [--faults PLAN.toml]\n");
  return 2;
}

int run(int argc, char** argv) {
  int64_t gpus = 12288;
  std::string modes = "analytic", dist = "normal:0.02", csv, trace, faults;
  uint64_t seed = 1;
  bool reference = true, all_ranks = false;
  int64_t batch = 0, slow = -1, hang_rank = -1;
  double hang_at_s = 2;
  // a number option's value, or a clear error naming the option and what would be valid
  auto number = [&](int& i, auto& out, const char* valid, auto ok) {
    const char* option = argv[i];
    const char* text = argv[++i];
    if (parse(text, out) && ok(out)) return true;
    std::fprintf(stderr, "bench_every_rank: %s '%s': %s\n", option, text, valid);
    return false;
  };
  auto positive = [](int64_t v) { return v > 0; };
  auto at_least_zero = [](auto v) { return v >= 0; };
  int64_t seed_value = 1;
  for (int i = 1; i < argc; ++i) {
    const bool has = i + 1 < argc;
    bool good = true;
    if (!std::strcmp(argv[i], "--gpus") && has)
      good = number(i, gpus, "a whole number of GPUs > 0", positive);
    else if (!std::strcmp(argv[i], "--mode") && has)
      modes = argv[++i];
    else if (!std::strcmp(argv[i], "--dist") && has)
      dist = argv[++i];
    else if (!std::strcmp(argv[i], "--seed") && has)
      good = number(i, seed_value, "a whole number >= 0", at_least_zero);
    else if (!std::strcmp(argv[i], "--per-rank-csv") && has)
      csv = argv[++i];
    else if (!std::strcmp(argv[i], "--trace") && has)
      trace = argv[++i];
    else if (!std::strcmp(argv[i], "--faults") && has)
      faults = argv[++i];
    else if (!std::strcmp(argv[i], "--batch") && has)
      good = number(i, batch, "a whole global batch > 0", positive);
    else if (!std::strcmp(argv[i], "--slow-gpus") && has)
      good = number(i, slow, "a whole number of servers >= 0", at_least_zero);
    else if (!std::strcmp(argv[i], "--hang-rank") && has)
      good = number(i, hang_rank, "a rank >= 0 (below the GPUs)", at_least_zero);
    else if (!std::strcmp(argv[i], "--hang-at-s") && has)
      good = number(i, hang_at_s, "a finite number of simulated seconds in [0, 1e12)",
                    [](double v) { return v >= 0 && v < 1e12; });
    else if (!std::strcmp(argv[i], "--no-reference"))
      reference = false;
    else if (!std::strcmp(argv[i], "--all-ranks"))
      all_ranks = true;
    else
      good = false;
    if (!good) return usage();
  }
  seed = static_cast<uint64_t>(seed_value);
  if (modes != "analytic" && modes != "flow" && modes != "both") {
    std::fprintf(stderr, "bench_every_rank: --mode '%s': analytic, flow or both\n", modes.c_str());
    return usage();
  }
  if (hang_rank >= 0 && modes != "analytic") {
    std::fprintf(stderr, "bench_every_rank: --hang-rank needs --mode analytic (a hung rank is simulated there only)\n");
    return usage();
  }
  bench::Stopwatch setup;
  auto job = config::load_job_preset("gpt-175b-megascale");
  config::apply_overrides(job, gpus, batch > 0 ? batch : gpus < 3072 ? 768 : 6144);
  config::ScenarioSpec spec; // as `twinscale simulate --cluster megascale-ampere`
  spec.job = job;
  spec.cluster = "megascale-ampere";
  spec.faults_file = faults; // read and checked against the fabric (names the file and the event)
  const config::Scenario scenario(spec);
  const topology::Fabric& fabric = scenario.fabric();
  const schedules::Schedule& schedule = scenario.schedule();
  const std::vector<int64_t>& place = scenario.gpu_of_rank();
  if (hang_rank >= schedule.world()) {
    std::fprintf(stderr, "bench_every_rank: --hang-rank %lld: the job has ranks 0..%lld\n",
                 static_cast<long long>(hang_rank), static_cast<long long>(schedule.world() - 1));
    return usage();
  }
  std::vector<double> speeds;
  if (slow < 0) {
    speeds = config::draw_gpu_speeds(dist, fabric.gpus(), seed);
  } else {
    const int64_t per_server = fabric.spec().server.gpus;
    if (slow * per_server > fabric.gpus()) {
      std::fprintf(stderr, "bench_every_rank: --slow-gpus %lld: the fabric has %lld servers\n",
                   static_cast<long long>(slow), static_cast<long long>(fabric.gpus() / per_server));
      return usage();
    }
    speeds.assign(static_cast<size_t>(fabric.gpus()), 1.0);
    for (int64_t i = 0; i < slow; ++i)
      speeds[static_cast<size_t>(i * per_server)] = 0.9 - 0.1 * static_cast<double>(i) / static_cast<double>(slow);
  }
  const std::string tag = "every_rank." + std::to_string(gpus) + "gpus";
  bench::report((tag + ".setup_wall").c_str(), setup.seconds(), "s");
  bench::report((tag + ".speed_min").c_str(), *std::min_element(speeds.begin(), speeds.end()), "");
  bench::report((tag + ".speed_max").c_str(), *std::max_element(speeds.begin(), speeds.end()), "");
  for (const char* m : {"analytic", "flow"}) {
    if (modes != "both" && modes != m) continue;
    sim::SimOptions o = scenario.options(); // the cluster's [network] included
    o.mode = std::string(m) == "flow" ? sim::SimMode::Flow : sim::SimMode::Analytic;
    const std::string p = tag + "." + m;
    if (reference) {
      const auto ref = sim::simulate(schedule, fabric, place, o);
      bench::report((p + ".symmetric_equal_speeds.iteration_time").c_str(), ref.iteration_time_s, "s");
    }
    o.every_rank = true;
    o.gpu_speed = speeds;
    o.replica_classes = !all_ranks;
    o.hang_rank = hang_rank;
    o.hang_at_s = hang_at_s;
    if (!trace.empty()) o.binary_trace = trace + "." + m + ".tstrace";
    const Cpu before = cpu_now();
    bench::Stopwatch sw;
    const auto r = sim::simulate(schedule, fabric, place, o);
    const double wall = sw.seconds();
    const Cpu after = cpu_now();
    const double cpu = (after.self_s - before.self_s) + (after.children_s - before.children_s);
    bench::report((p + ".wall").c_str(), wall, "s");
    bench::report((p + ".cpu").c_str(), cpu, "s");
    bench::report((p + ".ops").c_str(), static_cast<double>(r.ops_executed), "");
    bench::report((p + ".executed_ranks").c_str(), static_cast<double>(r.executed_ranks), "");
    bench::report((p + ".replica_classes").c_str(), static_cast<double>(r.replica_classes), "");
    bench::report((p + ".cpu_per_op").c_str(), 1e9 * cpu / std::max<double>(1, static_cast<double>(r.ops_executed)),
                  "ns");
    bench::report((p + ".flows").c_str(), static_cast<double>(r.flows), "");
    bench::report((p + ".iteration_time").c_str(), r.iteration_time_s, "s");
    bench::report((p + ".mfu").c_str(), r.mfu, "");
    if (hang_rank >= 0) {
      int64_t waiting = 0;
      for (const auto& h : r.hang_states) waiting += h.waiting.empty() ? 0 : 1;
      bench::report((p + ".hang_states").c_str(), static_cast<double>(r.hang_states.size()), "");
      bench::report((p + ".ranks_waiting").c_str(), static_cast<double>(waiting), "");
    }
    double lo = 1e300, hi = 0;
    for (const auto& t : r.per_rank) {
      lo = std::min(lo, t.forward_s + t.backward_s);
      hi = std::max(hi, t.forward_s + t.backward_s);
    }
    bench::report((p + ".rank_compute_min").c_str(), lo, "s");
    bench::report((p + ".rank_compute_max").c_str(), hi, "s");
    if (o.mode == sim::SimMode::Flow) bench::report((p + ".child_peak_rss").c_str(), after.children_rss_mib, "MiB");
    if (!csv.empty()) {
      const std::string path = csv + "." + m + ".csv", tmp = path + ".tmp";
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << sim::per_rank_csv(r);
      out.close();
      if (!out || std::rename(tmp.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "bench_every_rank: cannot write %s\n", path.c_str());
        std::remove(tmp.c_str());
        return 1;
      }
    }
  }
  bench::report((tag + ".peak_rss").c_str(), bench::peak_rss_mib(), "MiB");
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) { // a bad --dist, a job the cluster cannot hold…: named, not a crash
    std::fprintf(stderr, "bench_every_rank: %s\n", e.what());
    return 1;
  }
}
