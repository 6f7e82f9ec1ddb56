// Executing every rank (SimOptions::every_rank, per-GPU speeds): agreement with the
// symmetric run when all speeds are equal and with the full-detail run (every rank,
// every ring step as flows) when they are not, in iteration time and per-rank times;
// speed factors apply exactly; bad speed input is refused.
//
// Tolerances are the issue's: 0.5 % against the symmetric run (equal speeds) and 1 %
// against full detail, in iteration time and in every rank's forward, backward and
// communication-wait times (against the symmetric run, which gives each rank of a stage
// its representative's wait, the stage's mean wait). In the analytic mode every-rank and symmetric runs agree
// exactly (both count the load of a collective's symmetric images; the analytic
// full-detail run does not, so it is not a reference: the full-detail comparison is made
// in the flow mode, where every flow of every ring step is on the fabric). In the flow
// mode the job below is communication-bound (exposed DP ≈ 19 % of the iteration on a
// 200G fabric); measured: every rank vs symmetric 0.21 % in iteration time, 0.20 % in
// the worst rank's forward time and 0.27 % of the iteration in a stage's mean wait (the
// symmetric run leaves the pipeline sends of the pipelines it does not execute off the
// fabric; single ranks' waits differ by up to 1.4 %), every rank vs full detail 0.22 % in
// iteration time, 0.02 % in forward time and 0.32 % of the iteration in comm wait
// (merged ring steps against explicit ones under contention).
#include <catch2/catch.hpp>

#include <cmath>
#include <sstream>

#include "config/error.hpp"
#include "config/gpu_speeds.hpp"
#include "config/job_file.hpp"
#include "faults/fault_plan.hpp"
#include "sim/error.hpp"
#include "sim/per_rank_csv.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// tiny-megascale with enough hidden size that communication matters, on `gpus` GPUs of
/// tiny-2tier (32 GPUs: DP rings cross servers, ToRs and spines).
Lowered lower_medium(int64_t gpus, int64_t global_batch) {
  auto job = config::load_job_preset("tiny-megascale");
  job.model.hidden = 1024;
  job.model.heads = 16;
  job.model.seq_len = 1024;
  job.model.window = 256;
  job.model.vocab = 16000;
  job.options.iterations = 1;
  config::apply_overrides(job, gpus, global_batch);
  auto spec = tiny_cluster();
  spec.gpus = gpus;
  return lower_on(job, spec);
}

double rel(double a, double b) { return std::abs(a - b) / std::max(std::abs(b), 1e-30); }

} // namespace

TEST_CASE("every rank with equal speeds agrees with the symmetric run within 0.5 %", "[sim][every_rank]") {
  const auto l = lower_medium(32, 128);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    SimOptions agg, every;
    agg.mode = every.mode = mode;
    every.every_rank = true;
    const auto a = simulate(l.schedule, *l.fabric, l.gpus, agg);
    const auto e = simulate(l.schedule, *l.fabric, l.gpus, every);
    INFO("mode " << to_string(mode) << " symmetric " << a.iteration_time_s << " every rank " << e.iteration_time_s);
    CHECK(a.aggregated);
    CHECK_FALSE(e.aggregated);
    // the analytic mode executes one replica of the alike ones (every figure the same to
    // the bit: replica_classes_test.cpp); the flow mode every rank
    const int64_t replicas = mode == SimMode::Analytic ? l.schedule.layout.dp : 1;
    CHECK(e.executed_ranks * replicas == l.schedule.world());
    CHECK(e.replica_classes == (mode == SimMode::Analytic ? 1 : 0));
    const double tol = 5e-3;
    CHECK(rel(e.iteration_time_s, a.iteration_time_s) < tol);
    CHECK(rel(e.breakdown.compute_s, a.breakdown.compute_s) < tol);
    for (size_t s = 0; s < a.per_stage.size(); ++s) {
      const double sa = a.per_stage[s].compute_s + a.per_stage[s].exposed_tp_s + a.per_stage[s].exposed_ep_s +
                        a.per_stage[s].exposed_dp_s + a.per_stage[s].exposed_pp_s + a.per_stage[s].bubble_s +
                        a.per_stage[s].idle_s;
      const double se = e.per_stage[s].compute_s + e.per_stage[s].exposed_tp_s + e.per_stage[s].exposed_ep_s +
                        e.per_stage[s].exposed_dp_s + e.per_stage[s].exposed_pp_s + e.per_stage[s].bubble_s +
                        e.per_stage[s].idle_s;
      CHECK(sa == Approx(a.makespan_s).epsilon(1e-9));
      CHECK(se == Approx(e.makespan_s).epsilon(1e-9));
    }
    double fw = 0, bw = 0;
    for (size_t r = 0; r < e.per_rank.size(); ++r) {
      fw = std::max(fw, rel(e.per_rank[r].forward_s, a.per_rank[r].forward_s));
      bw = std::max(bw, rel(e.per_rank[r].backward_s, a.per_rank[r].backward_s));
    }
    // Communication wait: the symmetric run gives every rank of a stage its
    // representative's; executed, ranks of one stage differ by where their flows meet
    // contention (their ECMP paths), so the stage's mean is compared.
    std::vector<double> mean(a.per_stage.size(), 0.0), count(a.per_stage.size(), 0.0);
    for (const auto& t : e.per_rank) {
      mean[static_cast<size_t>(t.pp)] += t.comm_wait_s;
      count[static_cast<size_t>(t.pp)] += 1;
    }
    double cw = 0;
    for (const auto& t : a.per_rank)
      cw = std::max(cw, std::abs(mean[static_cast<size_t>(t.pp)] / count[static_cast<size_t>(t.pp)] - t.comm_wait_s) /
                            a.iteration_time_s);
    INFO("largest deviation: rank forward " << fw << ", rank backward " << bw << ", stage-mean comm wait " << cw
                                            << " of the iteration");
    CHECK(fw < tol);
    CHECK(bw < tol);
    CHECK(cw < tol);
  }
}

TEST_CASE("every rank with per-GPU speeds agrees with the full-detail run within 1 %", "[sim][every_rank]") {
  const auto l = lower_medium(32, 128);
  const auto speeds = config::draw_gpu_speeds("normal:0.05", l.fabric->gpus(), 7);
  for (SimMode mode : {SimMode::Flow}) {
    SimOptions every, full;
    every.mode = full.mode = mode;
    every.every_rank = true;
    full.aggregate = false;
    every.gpu_speed = full.gpu_speed = speeds;
    const auto e = simulate(l.schedule, *l.fabric, l.gpus, every);
    const auto f = simulate(l.schedule, *l.fabric, l.gpus, full);
    INFO("mode " << to_string(mode) << " every rank " << e.iteration_time_s << " full " << f.iteration_time_s);
    const double tol = 1e-2;
    CHECK(rel(e.iteration_time_s, f.iteration_time_s) < tol);
    double fw = 0, bw = 0, cw = 0;
    for (size_t r = 0; r < e.per_rank.size(); ++r) {
      fw = std::max(fw, rel(e.per_rank[r].forward_s, f.per_rank[r].forward_s));
      bw = std::max(bw, rel(e.per_rank[r].backward_s, f.per_rank[r].backward_s));
      cw = std::max(cw, std::abs(e.per_rank[r].comm_wait_s - f.per_rank[r].comm_wait_s) / f.iteration_time_s);
    }
    INFO("largest per-rank deviation: forward " << fw << ", backward " << bw << ", comm wait " << cw
                                                << " of the iteration");
    CHECK(fw < tol);
    CHECK(bw < tol);
    CHECK(cw < tol);
  }
}

TEST_CASE("a GPU speed factor scales that rank's compute exactly and turns symmetry off", "[sim][every_rank]") {
  const auto l = lower_medium(16, 16);
  SimOptions base, slow;
  base.mode = slow.mode = SimMode::Analytic;
  base.device.nccl_compute_slowdown = slow.device.nccl_compute_slowdown = 0; // no overlap slowdown
  slow.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  const int64_t rank = 5;
  slow.gpu_speed[static_cast<size_t>(l.gpus[rank])] = 0.8;
  const auto b = simulate(l.schedule, *l.fabric, l.gpus, base);
  const auto s = simulate(l.schedule, *l.fabric, l.gpus, slow);
  CHECK(b.aggregated);
  CHECK_FALSE(s.aggregated); // unequal speeds: every rank is executed
  CHECK(s.per_rank[rank].forward_s == Approx(b.per_rank[rank].forward_s / 0.8).epsilon(1e-9));
  CHECK(s.per_rank[rank].backward_s == Approx(b.per_rank[rank].backward_s / 0.8).epsilon(1e-9));
  CHECK(s.per_rank[rank + 1].forward_s == Approx(b.per_rank[rank + 1].forward_s).epsilon(1e-9));
  CHECK(s.iteration_time_s > b.iteration_time_s * 1.01); // the straggler holds everyone back
  // equal factors keep the symmetric run and scale every compute op
  SimOptions all;
  all.mode = SimMode::Analytic;
  all.device.nccl_compute_slowdown = 0;
  all.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 0.5);
  const auto h = simulate(l.schedule, *l.fabric, l.gpus, all);
  CHECK(h.aggregated);
  CHECK(h.breakdown.compute_s == Approx(2 * b.breakdown.compute_s).epsilon(1e-9));
}

TEST_CASE("every-rank runs are deterministic", "[sim][every_rank]") {
  const auto l = lower_medium(16, 16);
  SimOptions o;
  o.mode = SimMode::Flow;
  o.every_rank = true;
  o.gpu_speed = config::draw_gpu_speeds("uniform:0.9:1.0", l.fabric->gpus(), 3);
  const auto a = simulate(l.schedule, *l.fabric, l.gpus, o);
  const auto b = simulate(l.schedule, *l.fabric, l.gpus, o);
  CHECK(a.iteration_time_s == b.iteration_time_s);
  for (size_t r = 0; r < a.per_rank.size(); ++r) CHECK(a.per_rank[r].comm_wait_s == b.per_rank[r].comm_wait_s);
}

TEST_CASE("GPU speed input: distributions, files and their errors", "[sim][every_rank]") {
  const auto a = config::draw_gpu_speeds("normal:0.03", 1000, 11);
  const auto b = config::draw_gpu_speeds("normal:0.03", 1000, 11);
  const auto c = config::draw_gpu_speeds("normal:0.03", 1000, 12);
  CHECK(a == b);
  CHECK(a != c);
  double mean = 0;
  for (double f : a) mean += f / 1000.0;
  CHECK(mean == Approx(1.0).epsilon(5e-3));
  for (double f : config::draw_gpu_speeds("uniform:0.8:0.9", 100, 1)) {
    CHECK(f >= 0.8);
    CHECK(f < 0.9);
  }
  CHECK_THROWS_AS(config::draw_gpu_speeds("gauss:0.1", 4, 1), config::ConfigError);
  CHECK_THROWS_AS(config::draw_gpu_speeds("normal", 4, 1), config::ConfigError);
  CHECK_THROWS_AS(config::draw_gpu_speeds("uniform:0.9:0.8", 4, 1), config::ConfigError);

  const auto l = lower_medium(16, 16);
  const auto s = config::parse_gpu_speeds("scope,index,factor\n# a slow host and a slow GPU on it\nserver,1,0.9\n"
                                          "rank,9,0.5\n",
                                          "speeds.csv", *l.fabric, l.gpus);
  CHECK(s[static_cast<size_t>(l.gpus[9])] == Approx(0.45));
  CHECK(s[0] == 1.0);
  CHECK(s[8] == Approx(0.9));
  auto fails_with = [&](const std::string& text, const std::string& part) {
    try {
      config::parse_gpu_speeds(text, "speeds.csv", *l.fabric, l.gpus);
      FAIL("accepted: " << text);
    } catch (const config::ConfigError& e) {
      INFO(e.what());
      CHECK(std::string(e.what()).find(part) != std::string::npos);
    }
  };
  fails_with("rank,16,0.5\n", "speeds.csv:1: rank 16 outside 0..15");
  fails_with("gpu,1,0\n", "factor '0'");
  fails_with("host,1,0.5\n", "scope 'host' (valid: rank, gpu, server)");
  fails_with("rank,1\n", "2 fields");

  SimOptions o;
  o.mode = SimMode::Analytic;
  o.gpu_speed = {1.0, 2.0};
  CHECK_THROWS_AS(simulate(l.schedule, *l.fabric, l.gpus, o), SimError); // bad input: exit 1, not 3
  o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  o.gpu_speed[3] = -1;
  CHECK_THROWS_WITH(simulate(l.schedule, *l.fabric, l.gpus, o), Catch::Contains("GPU 3"));
}

TEST_CASE("every rank applies each GPU slowdown of a fault plan to its own rank", "[sim][every_rank][faults]") {
  const auto l = lower_medium(16, 16);
  const int64_t r1 = 2, r2 = 13; // different pipelines and stages
  faults::FaultPlan plan;
  for (int64_t rank : {r1, r2}) {
    faults::PlanEvent e;
    e.kind = faults::PlanEventKind::GpuSlowdown;
    e.target = "gpu";
    e.target_index = l.gpus[static_cast<size_t>(rank)];
    e.at_s = 0;
    e.until_s = faults::kForever;
    e.slowdown = rank == r1 ? 0.2 : 0.5;
    plan.events.push_back(e);
  }
  SimOptions base, faulty, speeds;
  base.mode = faulty.mode = speeds.mode = SimMode::Flow;
  base.device.nccl_compute_slowdown = faulty.device.nccl_compute_slowdown = speeds.device.nccl_compute_slowdown = 0;
  base.every_rank = faulty.every_rank = speeds.every_rank = true;
  faulty.faults = &plan;
  speeds.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  speeds.gpu_speed[static_cast<size_t>(l.gpus[r1])] = 0.8;
  speeds.gpu_speed[static_cast<size_t>(l.gpus[r2])] = 0.5;
  const auto b = simulate(l.schedule, *l.fabric, l.gpus, base);
  const auto f = simulate(l.schedule, *l.fabric, l.gpus, faulty);
  const auto s = simulate(l.schedule, *l.fabric, l.gpus, speeds);
  REQUIRE(f.completed);
  CHECK(f.per_rank[r1].forward_s == Approx(b.per_rank[r1].forward_s / 0.8).epsilon(1e-9));
  CHECK(f.per_rank[r2].forward_s == Approx(b.per_rank[r2].forward_s / 0.5).epsilon(1e-9));
  CHECK(f.per_rank[r1 + 1].forward_s == Approx(b.per_rank[r1 + 1].forward_s).epsilon(1e-9));
  // a slowdown for the whole run is the same input as a speed factor
  CHECK(f.iteration_time_s == Approx(s.iteration_time_s).epsilon(1e-9));
  CHECK(f.iteration_time_s > b.iteration_time_s);
}

TEST_CASE("GPT-175B at 128 GPUs: every rank with equal speeds agrees with the symmetric run within 0.5 %",
          "[sim][every_rank][slow]") {
  auto job = config::load_job_preset("gpt-175b-megascale");
  config::apply_overrides(job, 128, 64);
  auto spec = config::load_cluster("megascale-ampere");
  spec.gpus = 128;
  topology::Fabric fabric(spec);
  schedules::LoweringTarget target;
  target.gpu_memory_bytes = spec.gpu.memory_bytes;
  const auto schedule = schedules::lower(job, target);
  const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                    topology::PlacementPolicy::Linear, 1);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    SimOptions agg, every;
    agg.mode = every.mode = mode;
    every.every_rank = true;
    const auto a = simulate(schedule, fabric, gpus, agg);
    const auto e = simulate(schedule, fabric, gpus, every);
    INFO("mode " << to_string(mode) << " symmetric " << a.iteration_time_s << " every rank " << e.iteration_time_s);
    CHECK(rel(e.iteration_time_s, a.iteration_time_s) < 5e-3);
    for (size_t r = 0; r < e.per_rank.size(); ++r) {
      CHECK(rel(e.per_rank[r].forward_s, a.per_rank[r].forward_s) < 5e-3);
      CHECK(std::abs(e.per_rank[r].comm_wait_s - a.per_rank[r].comm_wait_s) < 5e-3 * a.iteration_time_s);
    }
  }
}

TEST_CASE("the per-rank CSV keeps its columns and gives each rank its own times", "[sim][every_rank]") {
  // the columns are the input of `twinscale diagnose` (docs/simulator.md): fixed order
  const auto l = lower_medium(16, 16);
  SimOptions o;
  o.mode = SimMode::Analytic;
  o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  o.gpu_speed[static_cast<size_t>(l.gpus[6])] = 0.7; // a straggler
  const auto r = simulate(l.schedule, *l.fabric, l.gpus, o);
  std::istringstream in(per_rank_csv(r));
  std::string line;
  std::getline(in, line);
  CHECK(line == "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s");
  size_t n = 0, slowest = 0;
  double slowest_compute = 0;
  for (; std::getline(in, line); ++n) {
    long long rank = 0, tp = 0, pp = 0, dp = 0;
    double fw = 0, bw = 0, cw = 0;
    REQUIRE(std::sscanf(line.c_str(), "%lld,%lld,%lld,%lld,%lf,%lf,%lf", &rank, &tp, &pp, &dp, &fw, &bw, &cw) == 7);
    REQUIRE(n < r.per_rank.size());
    const auto& t = r.per_rank[n];
    CHECK(rank == static_cast<long long>(n));
    CHECK((tp == t.tp && pp == t.pp && dp == t.dp));
    CHECK(fw == Approx(t.forward_s).margin(1e-9));
    CHECK(bw == Approx(t.backward_s).margin(1e-9));
    CHECK(cw == Approx(t.comm_wait_s).margin(1e-9));
    if (pp == r.per_rank[6].pp && fw + bw > slowest_compute) {
      slowest_compute = fw + bw;
      slowest = n;
    }
  }
  CHECK(n == static_cast<size_t>(l.schedule.world()));
  CHECK(slowest == 6); // the straggler is the rank of its stage with the most compute
}
