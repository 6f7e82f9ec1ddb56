// libFuzzer property: a small job lowers to a schedule that validates (no violation) and
// whose JSON round-trips byte-identically. The input's bytes choose the job's sizes and
// switches within small ranges; jobs that check_job rejects are skipped (typed errors).
#include <sstream>

#include "fuzz/fuzz_common.hpp"
#include "schedules/check_job.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"

namespace {
struct Bytes {
  const uint8_t* p;
  size_t n;
  uint8_t next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
  int64_t pick(std::initializer_list<int64_t> v) { return v.begin()[next() % v.size()]; }
  bool flag() { return next() & 1; }
};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace s = twinscale::schedules;
  Bytes b{data, size};
  s::JobSpec job;
  job.name = "fuzz";
  job.cluster = "tiny-2tier";
  auto& m = job.model;
  m.name = job.name;
  m.layers = b.pick({1, 2, 3, 4, 6, 8});
  m.heads = b.pick({1, 2, 4, 8});
  m.hidden = m.heads * b.pick({8, 16, 32});
  m.seq_len = b.pick({4, 8, 16, 32});
  m.vocab = b.pick({16, 32, 64, 128});
  m.ffn_hidden = b.pick({0, 32, 64});
  if (m.ffn_hidden == 0) m.ffn_hidden = 4 * m.hidden;
  m.block = b.flag() ? s::BlockKind::Parallel : s::BlockKind::Serial;
  if (b.flag()) {
    m.attention = s::AttentionKind::Sliding;
    m.window = 1 + b.next() % m.seq_len;
  }
  auto& p = job.parallel;
  p.tp = b.pick({1, 2, 4});
  p.pp = b.pick({1, 2, 4});
  p.dp = b.pick({1, 2, 3});
  p.vpp = b.pick({1, 1, 2});
  p.sequence_parallel = b.flag();
  p.zero_stage = b.pick({0, 1, 2});
  p.micro_batch = b.pick({1, 2});
  p.global_batch = p.dp * p.micro_batch * b.pick({1, 2, 4, 8});
  auto& o = job.options;
  o.pipeline = p.vpp > 1 ? s::PipelineKind::Interleaved : s::PipelineKind::OneFOneB;
  o.overlap.dp = b.flag();
  o.overlap.pp = b.flag();
  o.overlap.tp = b.flag();
  o.overlap.tp_chunks = o.overlap.tp ? b.pick({1, 2, 4}) : 1;
  o.optimizer = b.flag() ? s::OptimizerKind::Lamb : s::OptimizerKind::Adam;
  o.recompute = b.flag();
  o.operators.flash_attention = b.flag();
  o.operators.fused_layernorm = b.flag();
  o.operators.fused_gelu = b.flag();
  o.async_data_loading = b.flag();
  o.iterations = b.pick({1, 2});

  twinscale::fuzz::expect_clean_rejection([&] {
    s::LoweringTarget target;
    target.check_memory = false;
    const s::Schedule sch = s::lower(job, target); // JobError for impossible combinations
    s::ValidateOptions vo;
    vo.check_memory = false;
    const auto violations = s::validate(sch, vo);
    if (!violations.empty()) {
      std::fprintf(stderr, "lowered schedule of job %s does not validate: %s\n", s::job_to_json(job).c_str(),
                   s::describe(violations.front()).c_str());
      std::abort();
    }
    std::ostringstream a;
    s::write_schedule_json(sch, a);
    std::istringstream back(a.str());
    std::ostringstream c;
    s::write_schedule_json(s::read_schedule_json(back, "lowered.json"), c);
    if (a.str() != c.str()) {
      std::fprintf(stderr, "schedule of job %s does not round-trip\n", s::job_to_json(job).c_str());
      std::abort();
    }
  });
  return 0;
}
