// ZeRO-3 / FSDP and uneven pipeline stages: per-layer gathers and
// reduce-scatters, sharded memory, stage layer ranges, the Llama 3 405B layout.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>

#include "config/job_file.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/memory_choices.hpp"
#include "schedules/schedule.hpp"
#include "schedules/stage_layers.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/check_valid.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

namespace {
std::map<std::string, int> count_by_name(const Schedule& s, const Program& p) {
  std::map<std::string, int> out;
  for (const Op& op : p.ops) ++out[s.names[op.name]];
  return out;
}
} // namespace

TEST_CASE("uneven stages: first/last virtual stages hold the given layers, the rest split evenly",
          "[schedules][fsdp]") {
  JobSpec job = config::load_job_preset("llama3-405b");
  int64_t total = 0, next = 0;
  for (int64_t vs = 0; vs < 16 * 4; ++vs) {
    const LayerRange r = stage_layers(job, vs);
    CHECK(r.first == next); // contiguous
    CHECK(r.count == (vs == 0 || vs == 63 ? 1 : 2));
    next = r.first + r.count;
    total += r.count;
  }
  CHECK(total == 126);
  CHECK(max_stage_layers(job) == 2);
  job.parallel.last_stage_layers = 2; // 126 − 1 − 2 = 123 over 62 stages: not even
  CHECK_THROWS_WITH(check_job(job), Catch::Contains("must split evenly over the other 62"));
  job.parallel.first_stage_layers = job.parallel.last_stage_layers = 0;
  CHECK_THROWS_WITH(check_job(job), Catch::Contains("parallel.first_stage_layers / last_stage_layers"));
}

TEST_CASE("ZeRO-3: each layer gathered for every pass and reduced after its backward", "[schedules][fsdp]") {
  const JobSpec job = config::load_job_preset("tiny-fsdp");
  const Schedule s = lower(job);
  check_valid(s);
  const int M = static_cast<int>(job.parallel.micro_batches());
  for (int64_t p = 0; p < 2; ++p) {
    const int layers = static_cast<int>(stage_layers(job, p).count); // 1 on stage 0, 3 on stage 1
    CHECK(layers == (p == 0 ? 1 : 3));
    auto n = count_by_name(s, s.programs[static_cast<size_t>(p)]);
    CHECK(n["fsdp.param.ag"] == 2 * M * layers); // forward and backward (recomputation shares it)
    CHECK(n["fsdp.grad.rs"] == M * layers);
    CHECK(n["dp.param.ag"] == 1); // the chunk's embedding / head, once per iteration
    int gathered = 0;
    for (const Op& op : s.programs[static_cast<size_t>(p)].ops)
      if (s.names[op.name] == "fsdp.param.ag") {
        CHECK(op.group == GroupKind::Dp);
        CHECK(op.bytes == Approx(2 * layer_parameter_count(job, op.labels.layer)));
        ++gathered;
      }
    CHECK(gathered == 2 * M * layers);
  }
  // memory: parameters sharded over dp plus two gathered layers (prefetch); at dp 2 the
  // two gathered layers outweigh the saving, at dp 16 sharding wins
  JobSpec wide = job;
  wide.parallel.dp = 16;
  wide.parallel.global_batch = 64;
  JobSpec zero1 = wide;
  zero1.parallel.zero_stage = 1;
  const MemoryEstimate a = estimate_memory(zero1, 1), b = estimate_memory(wide, 1);
  const double n = stage_parameters(wide, 1);
  CHECK(b.parameters_bytes == Approx(2 * n / 16 + 2 * 2 * layer_parameter_count(wide, 1)));
  CHECK(b.parameters_bytes < a.parameters_bytes);
  CHECK(b.gradients_bytes < a.gradients_bytes);
}

TEST_CASE("ZeRO-3 with fsdp_prefetch = 0 blocks on every gather, with depth d the next d are prefetched",
          "[schedules][fsdp]") {
  JobSpec job = config::load_job_preset("tiny-fsdp");
  auto deps_of_first_gemm_after_gather = [](const Schedule& s) {
    // the compute op right after an fsdp gather waits for it when not prefetched
    const Program& p = s.programs[1];
    int waits = 0;
    for (size_t i = 0; i + 1 < p.ops.size(); ++i) {
      if (s.names[p.ops[i].name] != "fsdp.param.ag") continue;
      for (size_t j = i + 1; j < p.ops.size(); ++j) {
        if (p.ops[j].is_communication()) continue;
        for (uint32_t d : p.deps_of(p.ops[j])) waits += d == i;
        break;
      }
    }
    return waits;
  };
  const Schedule prefetched = lower(job);
  job.options.fsdp_prefetch = 0;
  const Schedule blocking = lower(job);
  const int M = static_cast<int>(job.parallel.micro_batches());
  CHECK(deps_of_first_gemm_after_gather(blocking) == 2 * M * 3); // every gather blocks its layer
  CHECK(deps_of_first_gemm_after_gather(prefetched) < 2 * M * 3);
  CHECK(validate(blocking).empty());
  // depth 2 on stage 1 (3 layers): the first gather of a pass blocks, the rest prefetched;
  // the memory estimate holds one more gathered layer
  job.options.fsdp_prefetch = 2;
  const Schedule deeper = lower(job);
  CHECK(deps_of_first_gemm_after_gather(deeper) <= deps_of_first_gemm_after_gather(prefetched));
  CHECK(validate(deeper).empty());
  JobSpec one = job;
  one.options.fsdp_prefetch = 1;
  CHECK(estimate_memory(job, 1).parameters_bytes - estimate_memory(one, 1).parameters_bytes ==
        Approx(2 * layer_parameter_count(job, 1)));
  job.options.fsdp_prefetch = 9;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("schedule.fsdp_prefetch = 9"));
}

TEST_CASE("memory by parallel choice: every layout the model admits, each with its worst stage", "[schedules][fsdp]") {
  const JobSpec job = config::load_job_preset("tiny-1f1b"); // 8 GPUs
  const auto choices = memory_by_parallel_choice(job, 80e9);
  REQUIRE(!choices.empty());
  bool own = false;
  for (const auto& c : choices) {
    JobSpec j = job;
    j.parallel = c.parallel;
    j.options.recompute = c.recompute;
    if (j.parallel.pp != job.parallel.pp || j.parallel.vpp != job.parallel.vpp)
      j.options.pipeline = PipelineKind::OneFOneB;
    CHECK_NOTHROW(check_job(j));
    CHECK(c.parallel.gpus() == 8);
    double worst = 0;
    for (int64_t p = 0; p < c.parallel.pp; ++p) worst = std::max(worst, estimate_memory(j, p).total_bytes());
    CHECK(c.worst.total_bytes() == Approx(worst));
    CHECK(c.fits == (worst <= 80e9));
    if (c.parallel.tp == 2 && c.parallel.pp == 2 && c.parallel.zero_stage == 1 && !c.recompute) {
      own = true;
      CHECK(c.worst.total_bytes() ==
            Approx(std::max(estimate_memory(job, 0).total_bytes(), estimate_memory(job, 1).total_bytes())));
    }
  }
  CHECK(own);
  CHECK(choices.size() >= 4 * 2 * 3); // tp 1, 2, 4, 8 · pp 1, 2, 4 at least, zero 0–3 · recompute
  // a tiny GPU: nothing fits
  for (const auto& c : memory_by_parallel_choice(job, 1e3)) CHECK(!c.fits);
}
