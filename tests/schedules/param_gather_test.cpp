// ZeRO-1 with DP overlap (Megatron-Core's overlap_param_gather): the parameters the last
// step updated are all-gathered from the start of the iteration, bucket by bucket in
// forward order, each launched at the previous bucket's pre-hook; each layer's first
// forward waits for its own bucket.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "config/job_file.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/stage_layers.hpp"
#include "tests/schedules/check_valid.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

namespace {

JobSpec zero1_job() {
  auto job = config::load_job_preset("tiny-1f1b");
  REQUIRE(job.parallel.zero_stage == 1);
  REQUIRE(job.parallel.dp > 1);
  job.options.overlap.dp = true;
  job.options.dp_bucket_params = 1; // one bucket per layer
  return job;
}

std::vector<size_t> gathers(const Schedule& s, int64_t program) {
  std::vector<size_t> out;
  const Program& p = s.programs[static_cast<size_t>(program)];
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (s.names[p.ops[i].name] == "dp.param.ag") out.push_back(i);
  return out;
}

double bytes_of(const Schedule& s, int64_t program, const std::vector<size_t>& ops) {
  double b = 0;
  for (size_t i : ops) b += s.programs[static_cast<size_t>(program)].ops[i].bytes;
  return b;
}

} // namespace

TEST_CASE("overlapped ZeRO-1 gathers the parameters bucket by bucket before the forwards that need them",
          "[schedules][lower]") {
  const JobSpec job = zero1_job();
  const Schedule s = lower(job);
  check_valid(s);
  auto exposed = job;
  exposed.options.overlap.dp = false;
  const Schedule after = lower(exposed);
  for (int64_t stage = 0; stage < job.parallel.pp; ++stage) {
    INFO("stage " << stage);
    const int64_t program = static_cast<int64_t>(s.program_of_rank[static_cast<size_t>(
        stage * job.parallel.tp * job.parallel.dp)]); // rank of (tp 0, dp 0, this stage)
    const Program& p = s.programs[static_cast<size_t>(program)];
    const auto ag = gathers(s, program);
    const LayerRange layers = stage_layers(job, stage);
    // one per layer, and one more for the embedding on the first stage (the head and the
    // final norm go with the last layer's bucket)
    CHECK(ag.size() == static_cast<size_t>(layers.count + (stage == 0 ? 1 : 0)));
    // the same bytes as the gather after the step that the non-overlapped form runs
    CHECK(bytes_of(s, program, ag) == Approx(bytes_of(after, program, gathers(after, program))));
    CHECK(bytes_of(s, program, ag) == Approx(2 * chunk_parameters(job, stage, 0)));
    // the first one before the first forward computation, none after the optimizer
    size_t first_forward = p.ops.size(), optimizer = 0;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (!op.is_communication() && op.labels.phase == Phase::Forward && first_forward == p.ops.size())
        first_forward = i;
      if (op.labels.phase == Phase::Optimizer && !op.is_communication()) optimizer = i;
    }
    REQUIRE(!ag.empty());
    CHECK(ag.front() < first_forward);
    for (size_t i : ag) CHECK(i < optimizer);
    // a layer's first forward op waits for the bucket that starts at that layer, and the
    // next bucket's gather is launched right after that wait (Megatron-Core's pre-hook):
    // after the computation before the layer, so that it overlaps the layer's forward
    std::map<int32_t, size_t> first_op_of_layer;
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const Op& op = p.ops[i];
      if (!op.is_communication() && op.labels.phase == Phase::Forward && op.labels.layer >= 0)
        first_op_of_layer.emplace(op.labels.layer, i);
    }
    int waited = 0;
    for (size_t k = 0; k < ag.size(); ++k) {
      const size_t i = ag[k];
      const int32_t layer = p.ops[i].labels.layer;
      if (layer < 0) continue; // the embedding's bucket: waited before the chunk's first forward
      REQUIRE(first_op_of_layer.count(layer) == 1);
      const size_t user = first_op_of_layer[layer];
      bool found = false;
      for (uint32_t d : p.deps_of(user)) found = found || d == i;
      CHECK(found);
      waited += found;
      CHECK(i < user);
      if (k + 1 < ag.size()) { // the next gather: between this wait and the layer's first op
        CHECK(ag[k + 1] > i);
        CHECK(ag[k + 1] < user);
      }
    }
    CHECK(waited == layers.count);
  }
}

TEST_CASE("overlapped ZeRO-1 without buckets gathers each chunk whole at the start", "[schedules][lower]") {
  auto job = zero1_job();
  job.options.dp_bucket_params = 0;
  const Schedule s = lower(job);
  check_valid(s);
  for (int64_t program = 0; program < static_cast<int64_t>(s.programs.size()); ++program) {
    const auto ag = gathers(s, program);
    CHECK(ag.size() == static_cast<size_t>(job.parallel.vpp));
  }
}
