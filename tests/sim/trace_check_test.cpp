// The one trace checker (schedules/trace_check.hpp) accepts the simulator's trace of a
// schedule, as it accepts the backend's traces of the same presets (tests/backend/
// mpi_run_test.cpp): both executors follow the same execution rules.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/trace_check.hpp"
#include "sim/simulate.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;

TEST_CASE("trace check: the simulator's traces of the tiny presets are valid executions", "[sim][trace_check]") {
  for (const char* preset : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    for (sim::SimMode mode : {sim::SimMode::Flow, sim::SimMode::Analytic}) {
      INFO(preset << " " << sim::to_string(mode));
      const auto job = config::load_job_preset(preset);
      auto spec = sim::test::tiny_cluster();
      spec.gpus = job.parallel.gpus();
      const topology::Fabric fabric(spec);
      const schedules::Schedule s = schedules::lower(job);
      const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                        topology::PlacementPolicy::Linear, 1);
      sim::SimOptions o;
      o.mode = mode;
      o.aggregate = false; // every rank executed, so every op is in the trace
      o.record_trace = true;
      const sim::SimReport r = sim::simulate(s, fabric, gpus, o);
      REQUIRE(r.completed);
      const auto violations = schedules::check_trace_semantics(s, r.trace.events);
      for (size_t i = 0; i < std::min<size_t>(violations.size(), 10); ++i) UNSCOPED_INFO(violations[i]);
      CHECK(violations.empty());
    }
  }
}

TEST_CASE("trace check: a trace that breaks the rules is reported by rank and op", "[sim][trace_check]") {
  const schedules::Schedule s = schedules::lower(config::load_job_preset("tiny-1f1b"));
  auto spec = sim::test::tiny_cluster();
  spec.gpus = s.world();
  const topology::Fabric fabric(spec);
  const auto gpus = topology::place(fabric, {2, 2, 2}, topology::PlacementPolicy::Linear, 1);
  sim::SimOptions o;
  o.aggregate = false;
  o.record_trace = true;
  sim::SimReport r = sim::simulate(s, fabric, gpus, o);
  REQUIRE(!r.trace.events.empty());
  auto events = r.trace.events;
  events.pop_back(); // an op that did not run
  const auto v = schedules::check_trace_semantics(s, events);
  REQUIRE_FALSE(v.empty());
  CHECK(v.front().find("did not run") != std::string::npos);
}
