// check_job: each impossible combination is a JobError naming the key and the rule.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "config/job_file.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
void expect(const std::function<void(JobSpec&)>& edit, const std::string& a, const std::string& b) {
  JobSpec job = config::load_job_preset("tiny-interleaved");
  REQUIRE_NOTHROW(check_job(job));
  edit(job);
  try {
    check_job(job);
    FAIL("accepted");
  } catch (const JobError& e) {
    INFO(e.what());
    CHECK(std::string(e.what()).find(a) != std::string::npos);
    CHECK(std::string(e.what()).find(b) != std::string::npos);
    CHECK(std::string(e.what()).find("tiny-interleaved") != std::string::npos);
  }
}
} // namespace

TEST_CASE("check_job rejects impossible parallelism", "[schedules][check_job][bad-input]") {
  expect([](JobSpec& j) { j.model.layers = 6; }, "model.layers", "pp·vpp");
  expect(
      [](JobSpec& j) {
        j.model.heads = 3;
        j.model.hidden = 255;
      },
      "model.heads", "parallel.tp");
  expect([](JobSpec& j) { j.model.hidden = 250; }, "model.hidden", "model.heads");
  expect([](JobSpec& j) { j.parallel.global_batch = 9; }, "global_batch", "dp·micro_batch");
  expect([](JobSpec& j) { j.parallel.global_batch = 10; }, "micro-batches % pp", "Megatron");
  expect([](JobSpec& j) { j.options.pipeline = PipelineKind::OneFOneB; }, "parallel.vpp", "interleaved");
  expect(
      [](JobSpec& j) {
        j.parallel.pp = 1;
        j.parallel.vpp = 4;
      },
      "interleaved", "pp > 1");
  expect([](JobSpec& j) { j.parallel.zero_stage = 4; }, "zero_stage", "0, 1, 2, 3");
  expect([](JobSpec& j) { j.model.attention = AttentionKind::Sliding; }, "model.window", "0 <");
  expect(
      [](JobSpec& j) {
        j.model.attention = AttentionKind::Sliding;
        j.model.window = 4096;
      },
      "model.window", "seq_len");
  expect([](JobSpec& j) { j.options.overlap.tp_chunks = 3; }, "tp_chunks", "divide");
  expect([](JobSpec& j) { j.model.vocab = 1023; }, "model.vocab", "parallel.tp");
  expect([](JobSpec& j) { j.parallel.dp = 0; }, "parallel.tp, pp, vpp, dp", "≥ 1");
}

TEST_CASE("lower() runs check_job first", "[schedules][check_job]") {
  JobSpec job = config::load_job_preset("tiny-1f1b");
  job.model.layers = 3;
  CHECK_THROWS_AS(lower(job), JobError);
}
