#include "schedules/memory_choices.hpp"

#include <algorithm>

#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"

namespace twinscale::schedules {

namespace {
bool accepted(const JobSpec& job) {
  try {
    check_job(job);
    return true;
  } catch (const JobError&) {
    return false;
  }
}

/// The job with the layout (tp, pp), its vpp / schedule kept if they still fit, else 1F1B.
bool with_layout(const JobSpec& base, int64_t tp, int64_t pp, JobSpec& out) {
  const int64_t gpus = base.parallel.gpus();
  const int64_t cp = base.parallel.cp;
  if (gpus % (tp * pp * cp) != 0) return false;
  out = base;
  out.parallel.tp = tp;
  out.parallel.pp = pp;
  out.parallel.dp = gpus / (tp * pp * cp);
  if (out.parallel.dp % out.parallel.ep != 0) return false;
  if (out.parallel.global_batch % (out.parallel.dp * out.parallel.micro_batch) != 0) return false;
  if (accepted(out)) return true;
  out.parallel.vpp = 1; // the job's interleaving does not fit this layout
  out.options.pipeline = PipelineKind::OneFOneB;
  if (pp != base.parallel.pp) out.parallel.first_stage_layers = out.parallel.last_stage_layers = 0;
  return accepted(out);
}
} // namespace

std::vector<MemoryChoice> memory_by_parallel_choice(const JobSpec& job, double gpu_memory_bytes) {
  std::vector<MemoryChoice> out;
  const bool uneven = job.parallel.first_stage_layers > 0 || job.parallel.last_stage_layers > 0;
  for (int64_t tp : {1, 2, 4, 8}) {
    for (int64_t pp = 1; pp <= std::min<int64_t>(job.model.layers, 128); ++pp) {
      if (uneven ? pp != job.parallel.pp : job.model.layers % pp != 0) continue;
      JobSpec layout;
      if (!with_layout(job, tp, pp, layout)) continue;
      for (int64_t zero = 0; zero <= 3; ++zero) {
        for (bool recompute : {false, true}) {
          JobSpec j = layout;
          j.parallel.zero_stage = zero;
          j.options.recompute = recompute;
          MemoryChoice c;
          c.parallel = j.parallel;
          c.recompute = recompute;
          for (int64_t p = 0; p < pp; ++p) {
            const MemoryEstimate m = estimate_memory(j, p);
            if (p == 0 || m.total_bytes() > c.worst.total_bytes()) {
              c.worst = m;
              c.worst_stage = p;
            }
          }
          c.fits = c.worst.total_bytes() <= gpu_memory_bytes;
          out.push_back(c);
        }
      }
    }
  }
  return out;
}

} // namespace twinscale::schedules
