// Every-rank runs executed by classes of identical replicas (sim/detail/replica_classes.cpp):
// every figure of the report, to the bit, equals the run that executes every rank
// (SimOptions::replica_classes off), for equal speeds, a few slow GPUs, context parallelism, expert
// parallelism (flat and hierarchical), ZB-H1, interleaving and FSDP, and so do both traces
// (every rank's events), the end state of a run with a hung rank (every rank's) and runs
// with a fault plan of jitter pauses and degraded links (for the whole run or in windows);
// runs where replicas differ everywhere, and runs the classes do not cover (flow mode,
// the folded expert layout, full detail), execute every rank.
#include <catch2/catch.hpp>

#include <cstring>

#include <filesystem>

#include "config/gpu_speeds.hpp"
#include "config/job_file.hpp"
#include "faults/fault_plan.hpp"
#include "schedules/binary_trace.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// The same run with every rank executed (SimOptions::replica_classes off).
SimReport every_rank_executed(const Lowered& l, SimOptions o) {
  o.replica_classes = false;
  return simulate(l.schedule, *l.fabric, l.gpus, o);
}

bool same_bits(const Breakdown& a, const Breakdown& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

/// Every figure of `c` (classes) equals `f`'s (every rank), bit for bit.
void check_identical(const SimReport& c, const SimReport& f) {
  CHECK(f.replica_classes == 0);
  CHECK(std::memcmp(&c.iteration_time_s, &f.iteration_time_s, sizeof(double)) == 0);
  CHECK(std::memcmp(&c.makespan_s, &f.makespan_s, sizeof(double)) == 0);
  CHECK(std::memcmp(&c.mfu, &f.mfu, sizeof(double)) == 0);
  CHECK(same_bits(c.breakdown, f.breakdown));
  REQUIRE(c.per_stage.size() == f.per_stage.size());
  for (size_t s = 0; s < c.per_stage.size(); ++s) CHECK(same_bits(c.per_stage[s], f.per_stage[s]));
  REQUIRE(c.per_rank.size() == f.per_rank.size());
  REQUIRE(c.per_rank_breakdown.size() == f.per_rank_breakdown.size());
  size_t differing = 0;
  for (size_t r = 0; r < c.per_rank.size(); ++r) {
    const RankTimes &a = c.per_rank[r], &b = f.per_rank[r];
    const bool same = a.rank == b.rank && a.tp == b.tp && a.pp == b.pp && a.dp == b.dp &&
                      std::memcmp(&a.forward_s, &b.forward_s, 3 * sizeof(double)) == 0 &&
                      same_bits(c.per_rank_breakdown[r], f.per_rank_breakdown[r]);
    differing += same ? 0 : 1;
  }
  CHECK(differing == 0);
  CHECK(c.completed == f.completed);
}

SimOptions every_rank_options() {
  SimOptions o;
  o.mode = SimMode::Analytic;
  o.every_rank = true;
  return o;
}

} // namespace

TEST_CASE("every rank with equal speeds runs one replica and reports every figure to the bit",
          "[sim][every_rank][replica_classes]") {
  const auto l = lower_tiny_preset("tiny-megascale"); // tp 2, pp 2, dp 8: eight replicas
  const SimOptions o = every_rank_options();
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  const auto f = every_rank_executed(l, o);
  CHECK_FALSE(c.aggregated);
  CHECK(c.replica_classes == 1);
  CHECK(c.executed_ranks == 4); // one replica: tp 2 × pp 2
  CHECK(f.executed_ranks == l.schedule.world());
  CHECK(c.ops_executed * 8 == f.ops_executed);
  check_identical(c, f);
}

TEST_CASE("a few slow GPUs: one class per distinct replica, every figure to the bit",
          "[sim][every_rank][replica_classes]") {
  const auto l = lower_tiny_preset("tiny-megascale");
  SimOptions o = every_rank_options();
  o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  // linear placement: rank r on GPU r; replica d holds ranks with (r / 2) % 8 == d
  o.gpu_speed[5] = 0.9;  // replica 2
  o.gpu_speed[21] = 0.9; // replica 2 of stage 1: the same replica again
  o.gpu_speed[12] = 0.8; // replica 6
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  const auto f = every_rank_executed(l, o);
  CHECK(c.replica_classes == 3); // nominal, replica 2, replica 6
  CHECK(c.executed_ranks == 12);
  check_identical(c, f);
  // the slow replicas are slower than the nominal ones, and everyone waits for them at DP
  CHECK(c.per_rank[5].forward_s > c.per_rank[0].forward_s);
  CHECK(c.per_rank[12].forward_s > c.per_rank[5].forward_s);
}

TEST_CASE("random slow GPUs from a few factors: classes and the full run agree to the bit on every preset",
          "[sim][every_rank][replica_classes]") {
  // factors from a short list, on a few GPUs each time: replicas collide into classes
  // in many ways (alike slowed replicas, several slowed GPUs in one replica, stages hit
  // unevenly); SplitMix64, so the draws are the same everywhere
  uint64_t state = 42;
  auto next = [&state]() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  const double factors[] = {0.7, 0.85, 0.95, 1.1};
  int by_classes = 0;
  for (const char* preset : {"tiny-megascale", "tiny-1f1b", "tiny-cp", "tiny-moe", "tiny-zb"}) {
    const auto l = lower_tiny_preset(preset);
    for (int trial = 0; trial < 4; ++trial) {
      SimOptions o = every_rank_options();
      o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
      const uint64_t slowed = 1 + next() % 5;
      for (uint64_t i = 0; i < slowed; ++i)
        o.gpu_speed[next() % o.gpu_speed.size()] = factors[next() % std::size(factors)];
      INFO(preset << " trial " << trial);
      const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
      const auto f = every_rank_executed(l, o);
      if (c.replica_classes == 0) // every replica hit differently: all executed
        CHECK(c.executed_ranks == l.schedule.world());
      else
        ++by_classes;
      check_identical(c, f);
    }
  }
  CHECK(by_classes >= 15); // of 20 runs (the draws are fixed: 19 run by classes)
}

TEST_CASE("every replica different: every rank is executed", "[sim][every_rank][replica_classes]") {
  const auto l = lower_tiny_preset("tiny-megascale");
  SimOptions o = every_rank_options();
  o.gpu_speed = config::draw_gpu_speeds("normal:0.05", l.fabric->gpus(), 7);
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  CHECK(c.replica_classes == 0);
  CHECK(c.executed_ranks == l.schedule.world());
}

TEST_CASE("context and expert parallelism: replicas hold whole rings and expert blocks, figures to the bit",
          "[sim][every_rank][replica_classes]") {
  for (const char* preset : {"tiny-cp", "tiny-moe", "tiny-moe-hier", "tiny-zb", "tiny-interleaved", "tiny-fsdp"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    SimOptions o = every_rank_options();
    o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
    o.gpu_speed[0] = 0.9;
    const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
    const auto f = every_rank_executed(l, o);
    CHECK(c.replica_classes == 2);
    CHECK(c.executed_ranks < l.schedule.world());
    check_identical(c, f);
  }
}

TEST_CASE("traces of a run by classes hold every rank's events, the same as the full run's",
          "[sim][every_rank][replica_classes]") {
  const auto l = lower_tiny_preset("tiny-megascale");
  const auto dir = std::filesystem::temp_directory_path() / "twinscale-replica-classes";
  std::filesystem::create_directories(dir);
  SimOptions o = every_rank_options();
  o.gpu_speed.assign(static_cast<size_t>(l.fabric->gpus()), 1.0);
  o.gpu_speed[9] = 0.85;
  o.record_trace = true; // the in-memory trace of every rank (Chrome JSON's)
  o.binary_trace = (dir / "classes.tstrace").string();
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  o.binary_trace = (dir / "full.tstrace").string();
  const auto f = every_rank_executed(l, o);
  CHECK(c.replica_classes == 2);
  check_identical(c, f);
  REQUIRE(c.trace.events.size() == f.trace.events.size());
  size_t differing = 0;
  for (size_t i = 0; i < c.trace.events.size(); ++i) {
    const auto &a = c.trace.events[i], &b = f.trace.events[i];
    differing += a.rank == b.rank && a.op_index == b.op_index && a.start_s == b.start_s && a.end_s == b.end_s &&
                         a.failed == b.failed
                     ? 0
                     : 1;
  }
  CHECK(differing == 0);
  const schedules::BinaryTraceReader tc((dir / "classes.tstrace").string()), tf((dir / "full.tstrace").string());
  REQUIRE(tc.world() == l.schedule.world());
  CHECK(tc.events() == tf.events());
  std::vector<schedules::BinaryTraceEvent> ec, ef;
  differing = 0;
  for (int64_t r = 0; r < tc.world(); ++r) {
    tc.read_rank(r, ec);
    tf.read_rank(r, ef);
    REQUIRE(ec.size() == ef.size());
    CHECK(ec.size() == l.schedule.programs[l.schedule.program_of_rank[static_cast<size_t>(r)]].ops.size());
    for (size_t i = 0; i < ec.size(); ++i)
      differing += ec[i].op_index == ef[i].op_index && ec[i].start_ns == ef[i].start_ns &&
                           ec[i].duration_ns == ef[i].duration_ns && ec[i].failed == ef[i].failed
                       ? 0
                       : 1;
  }
  CHECK(differing == 0);
  std::filesystem::remove_all(dir);
}

TEST_CASE("runs the classes do not cover execute every rank", "[sim][every_rank][replica_classes]") {
  const auto l = lower_tiny_preset("tiny-megascale");
  SimOptions flow = every_rank_options();
  flow.mode = SimMode::Flow; // each executed group's flows load the fabric
  SimOptions full = every_rank_options();
  full.aggregate = false; // full detail: no shortcut at all
  for (const SimOptions* o : {&flow, &full}) {
    const auto r = simulate(l.schedule, *l.fabric, l.gpus, *o);
    CHECK(r.replica_classes == 0);
    CHECK(r.executed_ranks == l.schedule.world());
  }
  const auto folded = lower_tiny_preset("tiny-moe-folded");
  const auto r = simulate(folded.schedule, *folded.fabric, folded.gpus, every_rank_options());
  CHECK(r.replica_classes == 0);
  CHECK(r.executed_ranks == folded.schedule.world());
}

TEST_CASE("a jitter plan: each jittered GPU's replica is a class of its own, every figure to the bit",
          "[sim][every_rank][replica_classes][faults]") {
  auto jitter = [](int64_t gpu, double probability, uint64_t seed) {
    faults::PlanEvent e;
    e.kind = faults::PlanEventKind::Jitter;
    e.target = "gpu";
    e.target_index = gpu;
    e.probability = probability;
    e.delay_s = 1e-3;
    e.seed = seed;
    return e;
  };
  faults::FaultPlan plan;                    // linear placement: GPU r holds rank r
  plan.events.push_back(jitter(5, 1.0, 3));  // replica 2 of tiny-megascale (tp 2, dp 8, pp 2)
  plan.events.push_back(jitter(12, 0.5, 4)); // replica 6
  plan.events.push_back(jitter(21, 1.0, 5)); // replica 2 again, its second stage
  for (const char* preset : {"tiny-megascale", "tiny-interleaved", "tiny-cp"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    for (bool every_rank : {true, false}) { // a rank-specific plan executes every rank either way
      SimOptions o = every_rank_options();
      o.every_rank = every_rank;
      o.faults = &plan;
      const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
      const auto f = every_rank_executed(l, o);
      CHECK(c.replica_classes >= 2);
      CHECK(c.executed_ranks < l.schedule.world());
      check_identical(c, f);
    }
  }
  // the jittered replica is slower than the others, which wait for it at DP
  const auto l = lower_tiny_preset("tiny-megascale");
  SimOptions o = every_rank_options();
  o.faults = &plan;
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  CHECK(c.replica_classes == 3); // nominal, replica 2, replica 6
  CHECK(c.per_rank[5].forward_s + c.per_rank[5].backward_s > c.per_rank[0].forward_s + c.per_rank[0].backward_s);
}

namespace {

/// A link degraded to half its bandwidth, for the whole run or from `at_s` on.
faults::PlanEvent degraded_link(int64_t link, double at_s = 0) {
  faults::PlanEvent e;
  e.kind = faults::PlanEventKind::LinkDegraded;
  e.target = "link";
  e.target_index = link;
  e.bandwidth_factor = 0.5;
  e.at_s = at_s;
  return e;
}

/// `plan` run on `l` by classes, checked figure by figure against the run that executes
/// every rank; the classes' report.
SimReport run_plan_by_classes(const Lowered& l, const faults::FaultPlan& plan) {
  SimOptions o = every_rank_options();
  o.faults = &plan;
  const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
  check_identical(c, every_rank_executed(l, o));
  return c;
}

/// Link `hop` of the route from GPU `from` to GPU `to`.
int64_t link_on_route(const topology::Fabric& fabric, int64_t from, int64_t to, size_t hop) {
  std::vector<topology::Hop> hops;
  fabric.route(from, to, 0, 1, topology::EcmpPolicy::Hash, hops);
  return hops.at(hop).link;
}

} // namespace

TEST_CASE("links degraded for the whole run: the replicas whose own groups cross them are classes apart, "
          "every figure to the bit",
          "[sim][every_rank][replica_classes][faults]") {
  for (const char* preset : {"tiny-megascale", "tiny-cp", "tiny-moe-hier", "tiny-interleaved"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    faults::FaultPlan plan;                                                   // linear placement: GPU r holds rank r
    plan.events.push_back(degraded_link(link_on_route(*l.fabric, 2, 18, 1))); // GPU 2's NIC uplink
    plan.events.push_back(degraded_link(link_on_route(*l.fabric, 2, 3, 0)));  // NVLink out of GPU 2
    const auto c = run_plan_by_classes(l, plan);
    CHECK(c.replica_classes >= 1);
    const auto nominal = simulate(l.schedule, *l.fabric, l.gpus, every_rank_options());
    CHECK(c.iteration_time_s > nominal.iteration_time_s); // the degradations are felt
  }
  const auto l =
      lower_tiny_preset("tiny-megascale"); // tp 2, pp 2, dp 8: replica d holds GPUs 2d, 2d + 1, 16 + 2d, 17 + 2d
  faults::FaultPlan nvlink;
  nvlink.events.push_back(degraded_link(link_on_route(*l.fabric, 2, 3, 0)));
  const auto c = run_plan_by_classes(l, nvlink);
  CHECK(c.replica_classes == 2); // replica 1's TP group crosses it, no other replica's own group does
  CHECK(c.executed_ranks == 8);
}

TEST_CASE("links degraded in time windows: replicas compared by their flows in every epoch, every figure to the bit",
          "[sim][every_rank][replica_classes][faults]") {
  for (const char* preset : {"tiny-megascale", "tiny-cp", "tiny-moe-hier", "tiny-interleaved"}) {
    INFO(preset);
    const auto l = lower_tiny_preset(preset);
    const auto nominal = simulate(l.schedule, *l.fabric, l.gpus, every_rank_options());
    const double T = nominal.makespan_s;
    faults::FaultPlan plan; // windows inside the run: an op's cost depends on when it starts
    faults::PlanEvent nic = degraded_link(link_on_route(*l.fabric, 2, 18, 1), 0.2 * T);
    nic.until_s = 0.6 * T;
    plan.events.push_back(nic);
    plan.events.push_back(degraded_link(link_on_route(*l.fabric, 2, 3, 0), 0.5 * T)); // until the end
    plan.events.push_back(degraded_link(link_on_route(*l.fabric, 4, 20, 1)));         // and one for the whole run
    const auto c = run_plan_by_classes(l, plan);
    CHECK(c.replica_classes >= 1);
    CHECK(c.iteration_time_s > nominal.iteration_time_s); // the degradations are felt
  }
  const auto l = lower_tiny_preset("tiny-megascale"); // replica d holds GPUs 2d, 2d + 1, 16 + 2d, 17 + 2d
  faults::FaultPlan nvlink;
  nvlink.events.push_back(degraded_link(link_on_route(*l.fabric, 2, 3, 0), 1e-4));
  const auto c = run_plan_by_classes(l, nvlink);
  CHECK(c.replica_classes == 2); // replica 1's TP group crosses it, no other replica's own group does
}

TEST_CASE("a hung rank: its replica is a class of its own, every rank's end state as in the full run",
          "[sim][every_rank][replica_classes]") {
  for (const char* preset : {"tiny-megascale", "tiny-1f1b", "tiny-interleaved", "tiny-moe-hier", "tiny-cp"}) {
    const auto l = lower_tiny_preset(preset);
    const int64_t world = l.schedule.world();
    for (const int64_t hung_rank : {int64_t{3}, world - 1}) {
      for (const double at : {1e-3, 0.0}) {
        INFO(preset << " rank " << hung_rank << " hung at " << at);
        SimOptions o = every_rank_options();
        o.hang_rank = hung_rank;
        o.hang_at_s = at;
        const auto c = simulate(l.schedule, *l.fabric, l.gpus, o);
        const auto f = every_rank_executed(l, o);
        CHECK(c.replica_classes == 2); // the hung rank's replica and all the others
        CHECK_FALSE(c.completed);
        CHECK(c.failure == f.failure);
        check_identical(c, f);
        REQUIRE(c.hang_states.size() == static_cast<size_t>(world));
        REQUIRE(f.hang_states.size() == c.hang_states.size());
        size_t differing = 0;
        for (size_t r = 0; r < c.hang_states.size(); ++r) {
          const records::RankState &a = c.hang_states[r], &b = f.hang_states[r];
          bool same = a.rank == b.rank && a.rank == static_cast<int64_t>(r) && a.status == b.status &&
                      a.ops_completed == b.ops_completed && a.ops_total == b.ops_total &&
                      std::memcmp(&a.elapsed_s, &b.elapsed_s, sizeof(double)) == 0 && a.issued == b.issued &&
                      a.waiting.size() == b.waiting.size();
          for (size_t w = 0; same && w < a.waiting.size(); ++w) {
            const records::WaitingOp &x = a.waiting[w], &y = b.waiting[w];
            same = x.op_index == y.op_index && x.name == y.name && x.kind == y.kind && x.group == y.group &&
                   x.stream == y.stream && x.channel == y.channel && x.sequence == y.sequence && x.peers == y.peers &&
                   std::memcmp(&x.waiting_s, &y.waiting_s, sizeof(double)) == 0;
          }
          differing += same ? 0 : 1;
        }
        CHECK(differing == 0);
        CHECK(c.hang_states[static_cast<size_t>(hung_rank)].status == records::RunStatus::Aborted);
      }
    }
  }
}
