// Pipeline schedules: with free communication the bubble of 1F1B is (p−1)/m of the
// compute time and (p−1)/(v·m) for interleaved 1F1B (Narayanan et al., SC'21).
#include <catch2/catch.hpp>

#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

struct PipelineCase {
  topology::ClusterSpec spec;
  schedules::Schedule schedule;
  std::vector<int64_t> gpus;
  PipelineCase(int64_t p, int64_t v, int64_t m, double tf, double tb) : spec(tiny_cluster()) {
    spec.switch_spec.latency_s = 0;
    spec.fabric.cable_latency_s = 0;
    std::vector<schedules::Program> programs;
    std::vector<uint32_t> of;
    for (int64_t s = 0; s < p; ++s) {
      programs.push_back(pipeline_program(s, p, v, m, tf / v, tb / v, spec.gpu.hbm_bw_bytes_per_s));
      of.push_back(static_cast<uint32_t>(s));
      gpus.push_back(s); // one server: free NVLink transfers of 0 bytes
    }
    schedule = make_schedule({1, 1, p}, std::move(programs), std::move(of));
  }
};

} // namespace

TEST_CASE("1F1B bubble fraction is (p-1)/m with free communication", "[sim][pipeline]") {
  for (auto [p, m] : {std::pair<int64_t, int64_t>{4, 8}, {4, 16}, {8, 8}, {2, 3}}) {
    PipelineCase c(p, 1, m, 1e-3, 2e-3);
    topology::Fabric fabric(c.spec);
    for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
      const auto r = simulate(c.schedule, fabric, c.gpus, exact_options(mode));
      INFO("p " << p << " m " << m << " mode " << to_string(mode));
      CHECK(r.iteration_time_s == Approx((m + p - 1) * 3e-3).epsilon(1e-9));
      for (const auto& stage : r.per_stage) {
        CHECK(stage.compute_s == Approx(m * 3e-3).epsilon(1e-9));
        CHECK(stage.bubble_s / stage.compute_s == Approx(double(p - 1) / m).epsilon(1e-9));
        CHECK(stage.idle_s == Approx(0).margin(1e-12));
      }
    }
  }
}

TEST_CASE("interleaved 1F1B bubble fraction is (p-1)/(v m) with free communication", "[sim][pipeline]") {
  // (p = 2 is left out: there a rank's previous and next stage coincide, and the
  // two directions of this test schedule would share one send/recv pair queue.)
  for (auto [p, v, m] : {std::tuple<int64_t, int64_t, int64_t>{4, 2, 8}, {4, 3, 8}, {8, 2, 16}}) {
    PipelineCase c(p, v, m, 1e-3, 2e-3);
    topology::Fabric fabric(c.spec);
    const auto r = simulate(c.schedule, fabric, c.gpus, exact_options(SimMode::Analytic));
    INFO("p " << p << " v " << v << " m " << m);
    CHECK(r.breakdown.bubble_s / r.breakdown.compute_s == Approx(double(p - 1) / (v * m)).epsilon(1e-9));
    CHECK(r.iteration_time_s == Approx(m * 3e-3 * (1 + double(p - 1) / (v * m))).epsilon(1e-9));
  }
}

TEST_CASE("aggregated pipelines of DP replicas match the unaggregated run", "[sim][aggregation]") {
  // tp 2, dp 2, pp 2 on 4 servers: pipeline sends of 8 MB, a TP all-reduce per forward,
  // DP reduce-scatter of gradients at the end; every rank of a stage runs one program.
  const int64_t tp = 2, dp = 2, p = 2, m = 4;
  auto spec = tiny_cluster();
  std::vector<schedules::Program> programs;
  for (int64_t s = 0; s < p; ++s) {
    schedules::Program prog = pipeline_program(s, p, 1, m, 1e-3, 2e-3, spec.gpu.hbm_bw_bytes_per_s, 8e6);
    // append a TP all-reduce and a DP reduce-scatter + all-gather after the last op
    const auto last = static_cast<uint32_t>(prog.ops.size() - 1);
    Op ar = collective(OpKind::AllReduce, GroupKind::Tp, 16e6, Stream::TpComm);
    ar.dep_begin = static_cast<uint32_t>(prog.deps.size());
    ar.dep_count = 1;
    prog.deps.push_back(last);
    prog.ops.push_back(ar);
    Op rs = collective(OpKind::ReduceScatter, GroupKind::Dp, 64e6, Stream::DpComm);
    rs.dep_begin = static_cast<uint32_t>(prog.deps.size());
    rs.dep_count = 1;
    prog.deps.push_back(static_cast<uint32_t>(prog.ops.size() - 1));
    prog.ops.push_back(rs);
    programs.push_back(std::move(prog));
  }
  schedules::Layout L{tp, dp, p};
  std::vector<uint32_t> of;
  std::vector<int64_t> gpus;
  for (int64_t r = 0; r < L.world(); ++r) {
    of.push_back(static_cast<uint32_t>(L.coord(r).pp));
    // TP pairs inside a server; DP replicas and stages on different servers
    const auto c = L.coord(r);
    gpus.push_back(8 * (c.dp + dp * c.pp) + c.tp);
  }
  auto schedule = make_schedule(L, std::move(programs), std::move(of));
  topology::Fabric fabric(spec);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    SimOptions agg = exact_options(mode), full = exact_options(mode);
    agg.aggregate = true;
    full.aggregate = false;
    agg.channels = full.channels = 2;
    const auto a = simulate(schedule, fabric, gpus, agg);
    const auto f = simulate(schedule, fabric, gpus, full);
    INFO("mode " << to_string(mode));
    CHECK(a.aggregated);
    CHECK_FALSE(f.aggregated);
    CHECK(a.executed_ranks == p);
    CHECK(f.executed_ranks == L.world());
    CHECK(a.iteration_time_s == Approx(f.iteration_time_s).epsilon(1e-3));
    CHECK(a.breakdown.compute_s == Approx(f.breakdown.compute_s).epsilon(1e-6));
    CHECK(a.breakdown.bubble_s + a.breakdown.exposed_pp_s ==
          Approx(f.breakdown.bubble_s + f.breakdown.exposed_pp_s).epsilon(1e-2));
  }
}
