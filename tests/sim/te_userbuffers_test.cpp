// Transformer Engine's userbuffers TP overlap (schedules/job.hpp OverlapSpec::tp_sms_*,
// kTeUbRoles): every role names a TP collective the lowering emits; the SMs a role takes
// slow the compute that runs beside it, and ring-exchange roles (0 SMs, copy engines)
// slow nothing.
#include <catch2/catch.hpp>

#include <algorithm>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// tiny-1f1b (tp 2 with sequence parallelism) with its TP communication overlapped in
/// two chunks and layers large enough that the overlap matters.
schedules::JobSpec overlapped() {
  auto job = with_larger_layers(config::load_job_preset("tiny-1f1b"), 1024, 16, 1024);
  job.options.overlap.tp = true;
  job.options.overlap.tp_chunks = 2;
  return job;
}

double iteration_s(const schedules::JobSpec& job) {
  auto spec = tiny_cluster();
  spec.gpus = job.parallel.gpus();
  const topology::Fabric fabric(spec);
  const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                    topology::PlacementPolicy::Linear, 1);
  SimOptions o;
  o.mode = SimMode::Analytic;
  return simulate(schedules::lower(job), fabric, gpus, o).iteration_time_s;
}

schedules::JobSpec with_every_role(schedules::JobSpec job, int64_t sms) {
  for (const schedules::TeUbRole& role : schedules::kTeUbRoles) job.options.overlap.*role.sms = sms;
  return job;
}

} // namespace

TEST_CASE("TE userbuffers: every role names a TP collective of an overlapped sequence-parallel layer", "[sim][te_ub]") {
  const auto s = schedules::lower(overlapped());
  for (const schedules::TeUbRole& role : schedules::kTeUbRoles) {
    INFO(role.te_name << " -> " << role.op_name);
    const auto name = std::find(s.names.begin(), s.names.end(), role.op_name);
    REQUIRE(name != s.names.end());
    const auto id = static_cast<uint32_t>(name - s.names.begin());
    bool on_tp_stream = false;
    for (const auto& program : s.programs)
      for (const auto& op : program.ops)
        on_tp_stream = on_tp_stream || (op.name == id && op.stream == schedules::Stream::TpComm);
    CHECK(on_tp_stream);
  }
}

TEST_CASE("TE userbuffers: the SMs a role takes slow the compute beside it, copy-engine roles slow nothing",
          "[sim][te_ub]") {
  const auto job = overlapped();
  const double asked = iteration_s(job); // every TP collective at the channels asked for
  const double copy_engines = iteration_s(with_every_role(job, 0));
  auto proj = with_every_role(job, 0);
  proj.options.overlap.tp_sms_proj_fprop = 24;
  const double pipelined = iteration_s(proj);
  INFO("asked " << asked << " s, all 0 SMs " << copy_engines << " s, proj_fprop 24 SMs " << pipelined << " s");
  CHECK(copy_engines < asked);
  CHECK(pipelined > copy_engines);
  // without TP overlap the keys change nothing (NCCL runs the TP collectives)
  auto plain = job;
  plain.options.overlap.tp = false;
  plain.options.overlap.tp_chunks = 1;
  CHECK(iteration_s(with_every_role(plain, 24)) == iteration_s(plain));
}

TEST_CASE("TE userbuffers: an SM count outside -1..255 is refused naming the key", "[sim][te_ub]") {
  auto job = overlapped();
  job.options.overlap.tp_sms_qkv_wgrad = 300;
  CHECK_THROWS_WITH(schedules::lower(job),
                    Catch::Contains("schedule.overlap.tp_sms_qkv_wgrad = 300") && Catch::Contains("valid: -1"));
}
