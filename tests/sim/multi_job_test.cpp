// Several jobs on one fabric (sim/multi_job.hpp): one job through simulate_jobs is the
// same run as simulate(); jobs on disjoint rails share no link and do not slow each
// other; jobs whose rings cross the same ToR uplinks share links and are not faster
// together than alone.
#include <catch2/catch.hpp>

#include "sim/multi_job.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// A ring all-reduce of 256 MB across 4 servers of tiny-2tier (2 rails, 2 servers per
/// ToR group), one GPU per server at local index `local`.
struct Ring {
  schedules::Schedule schedule;
  std::vector<int64_t> gpus;
  Ring(const topology::ClusterSpec& spec, int64_t local) {
    ProgramBuilder b;
    const auto c = b.add(compute(1e-3, spec.gpu.hbm_bw_bytes_per_s));
    b.add(collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm), {c});
    schedule = make_schedule({1, 4, 1}, {b.take()}, {0, 0, 0, 0});
    for (int64_t s = 0; s < 4; ++s) gpus.push_back(s * 8 + local);
  }
  Ring(const topology::ClusterSpec& spec, std::vector<int64_t> on) : Ring(spec, 0) { gpus = std::move(on); }
};

} // namespace

TEST_CASE("simulate_jobs: one job is the simulate() run", "[multi_job]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  const Ring a(spec, 0);
  const SimOptions o = exact_options(SimMode::Flow);
  const auto one = simulate_jobs({{"a", &a.schedule, a.gpus}}, fabric, o);
  const auto ref = simulate(a.schedule, fabric, a.gpus, o);
  REQUIRE(one.jobs.size() == 1);
  CHECK(one.jobs[0].completed);
  CHECK(one.jobs[0].iteration_time_s == Approx(ref.iteration_time_s).epsilon(1e-12));
  CHECK(one.shared_links.empty());
}

TEST_CASE("simulate_jobs: jobs on different rails share nothing and keep their time", "[multi_job]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  const Ring a(spec, 0), b(spec, 1); // NIC 0 → rail 0, NIC 1 → rail 1
  const SimOptions o = exact_options(SimMode::Flow);
  const auto both = simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &b.schedule, b.gpus}}, fabric, o);
  const auto alone = simulate_jobs({{"a", &a.schedule, a.gpus}}, fabric, o);
  CHECK(both.shared_links.empty());
  CHECK(both.jobs[0].iteration_time_s == Approx(alone.jobs[0].iteration_time_s).epsilon(1e-9));
  CHECK(both.jobs[1].iteration_time_s == Approx(alone.jobs[0].iteration_time_s).epsilon(1e-9));
}

TEST_CASE("simulate_jobs: jobs on one rail fight over ToR uplinks", "[multi_job]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  const Ring a(spec, 0), b(spec, 2); // NICs 0 and 2: both on rail 0, same ToRs
  const SimOptions o = exact_options(SimMode::Flow);
  const auto both = simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &b.schedule, b.gpus}}, fabric, o);
  const auto alone = simulate_jobs({{"a", &a.schedule, a.gpus}}, fabric, o);
  REQUIRE_FALSE(both.shared_links.empty());
  for (const auto& s : both.shared_links) {
    const auto kind = fabric.links()[s.link].kind;
    CHECK(kind != topology::LinkKind::NicToTor); // each job has its own NICs
    CHECK(s.bytes_by_job[0] > 0);
    CHECK(s.bytes_by_job[1] > 0);
  }
  CHECK(both.jobs[0].iteration_time_s >= alone.jobs[0].iteration_time_s * (1 - 1e-12));
}

TEST_CASE("simulate_jobs: with DCQCN a job that shares no link keeps its exact time", "[multi_job][congestion]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  // b: four rings of two channels on rail 0 (local GPUs 0, 2, 4, 6 of 4 servers) whose
  // flows start together and meet on the ToR uplinks, paying DCQCN's transient; a: three
  // rings on rail 1 (local GPUs 1, 3, 5 of 4 servers), its own links. Ranks of b are
  // numbered after a's in the run together, first alone.
  const auto rings = [&](int64_t tp, const std::vector<int64_t>& locals) {
    ProgramBuilder pb;
    const auto c = pb.add(compute(1e-3, spec.gpu.hbm_bw_bytes_per_s));
    pb.add(collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm), {c});
    std::pair<schedules::Schedule, std::vector<int64_t>> out{
        make_schedule({tp, 4, 1}, {pb.take()}, std::vector<uint32_t>(static_cast<size_t>(4 * tp), 0)), {}};
    for (int64_t s = 0; s < 4; ++s)
      for (int64_t l : locals) out.second.push_back(s * 8 + l);
    return out;
  };
  const auto [a, on_a] = rings(3, {1, 3, 5});
  const auto [b, on_b] = rings(4, {0, 2, 4, 6});
  SimOptions o = exact_options(SimMode::Flow);
  o.channels = 2;
  o.network.congestion_control = topology::CongestionControl::Dcqcn;
  const auto both = simulate_jobs({{"a", &a, on_a}, {"b", &b, on_b}}, fabric, o);
  const auto alone = simulate_jobs({{"b", &b, on_b}}, fabric, o);
  const auto without = [&] {
    SimOptions n = o;
    n.network.congestion_control = topology::CongestionControl::None;
    return simulate_jobs({{"b", &b, on_b}}, fabric, n).jobs[0].iteration_time_s;
  }();
  REQUIRE(both.shared_links.empty());
  CHECK(alone.jobs[0].iteration_time_s > without * 1.001); // its own flows collide
  // Which job's flows are handed to the engine first at an instant does not decide
  // which of them pays the collision: the same times to the last bit.
  CHECK(both.jobs[1].iteration_time_s == alone.jobs[0].iteration_time_s);
  CHECK(both.jobs[0].iteration_time_s == simulate_jobs({{"a", &a, on_a}}, fabric, o).jobs[0].iteration_time_s);
}

TEST_CASE("simulate_jobs: refuses overlapping GPUs and the analytic mode", "[multi_job]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  const Ring a(spec, 0);
  SimOptions o = exact_options(SimMode::Flow);
  CHECK_THROWS_WITH(simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &a.schedule, a.gpus}}, fabric, o),
                    Catch::Contains("is given to job 'a' and to job 'b'"));
  o.mode = SimMode::Analytic;
  CHECK_THROWS_WITH(simulate_jobs({{"a", &a.schedule, a.gpus}}, fabric, o), Catch::Contains("flow mode"));
}

TEST_CASE("simulate_jobs: a job that starts later meets only what is left of the other", "[multi_job]") {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  // b's GPUs alternate rails: its transfers to a rail-0 GPU leave through the PXN relay
  // on rail 0, GPU 0's NIC among them, which a's ring uses.
  const Ring a(spec, 0), b(spec, std::vector<int64_t>{1, 10, 17, 26});
  const SimOptions o = exact_options(SimMode::Flow);
  const double alone = simulate_jobs({{"a", &a.schedule, a.gpus}}, fabric, o).jobs[0].iteration_time_s;
  const auto together = simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &b.schedule, b.gpus}}, fabric, o);
  const double full = together.jobs[0].iteration_time_s;
  REQUIRE(full > alone * 1.01);
  // b starts after a has ended: neither sees the other; b's time counts from its start.
  const auto apart = simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &b.schedule, b.gpus, 2 * full}}, fabric, o);
  CHECK(apart.jobs[0].iteration_time_s == Approx(alone).epsilon(1e-9));
  CHECK(apart.jobs[1].iteration_time_s == Approx(alone).epsilon(1e-9));
  // b starts halfway through a's iteration alone: a is slowed, less than with b from 0.
  const auto late = simulate_jobs({{"a", &a.schedule, a.gpus}, {"b", &b.schedule, b.gpus, alone / 2}}, fabric, o);
  CHECK(late.jobs[0].iteration_time_s > alone * 1.001);
  CHECK(late.jobs[0].iteration_time_s < full);
  CHECK(late.jobs[1].completed);
  CHECK_THROWS_WITH(simulate_jobs({{"a", &a.schedule, a.gpus, -1.0}}, fabric, o), Catch::Contains("start_s"));
}
