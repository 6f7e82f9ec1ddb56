// lower(): a job → per-pipeline-rank programs (shared by the tp × dp ranks of a stage;
// with context parallelism one per (pipeline rank, cp rank), program pp·cp + cp_rank),
// model FLOPs and memory per stage. The pieces: pipeline.cpp (pass order),
// detail/layer_ops.cpp (a layer's ops), detail/stage_lowering.cpp (p2p, DP/ZeRO,
// optimizer, data), memory.cpp (memory per stage).
#include <cmath>
#include <iomanip>
#include <sstream>

#include "schedules/check_job.hpp"
#include "schedules/detail/stage_lowering.hpp"
#include "schedules/error.hpp"
#include "schedules/estimate.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules {

namespace {
std::string gb(double bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << bytes / 1e9 << " GB";
  return os.str();
}
} // namespace

Schedule lower(const JobSpec& job, const LoweringTarget& target) {
  check_job(job);
  check_lowering_size(job); // bounded ops and memory before anything is built
  Schedule out;
  out.job = job;
  const int64_t CP = job.parallel.cp;
  out.layout = Layout{job.parallel.tp,          job.parallel.dp_cp(), job.parallel.pp, job.parallel.ep, CP,
                      job.parallel.ep_domain(), job.parallel.etp};
  const int64_t P = job.parallel.pp;

  for (int64_t p = 0; p < P; ++p) {
    const MemoryEstimate mem = estimate_memory(job, p);
    if (target.check_memory && mem.total_bytes() > target.gpu_memory_bytes)
      throw JobError(
          "job '" + job.name + "': pipeline stage " + std::to_string(p) + " needs " + gb(mem.total_bytes()) +
          " per GPU (parameters " + gb(mem.parameters_bytes) + ", gradients " + gb(mem.gradients_bytes) +
          ", optimizer " + gb(mem.optimizer_bytes) + ", activations " + gb(mem.activations_bytes) + ") but " +
          (target.gpu_memory_holder.empty() ? "the GPU" : "the tightest GPU, " + target.gpu_memory_holder + ",") +
          " has " + gb(target.gpu_memory_bytes) +
          "; use schedule.recompute, operators.flash_attention, a higher zero_stage, "
          "or more tp/pp");
    out.memory_by_stage.push_back(mem);
  }

  // model FLOPs summed over each program right after it is lowered (its ops still in
  // the caches), in op order and program order as ever
  double flops = 0;
  const double ranks_per_program = static_cast<double>(job.parallel.tp * job.parallel.dp);
  detail::NameTable names;
  out.programs.reserve(P * CP);
  for (int64_t p = 0; p < P; ++p)
    for (int64_t c = 0; c < CP; ++c) {
      const Program* sibling = out.programs.empty() ? nullptr : &out.programs.back();
      out.programs.push_back(detail::StageLowering(job, p, c, names, target.replay_layers).run(sibling));
      double f = 0;
      for (const Op& op : out.programs.back().ops)
        if ((op.kind == OpKind::Gemm || op.kind == OpKind::Attention) && op.labels.phase != Phase::Recompute)
          f += op.flops;
      flops += f * ranks_per_program;
    }
  out.names = names.take();

  out.program_of_rank.resize(out.layout.world());
  for (int64_t r = 0; r < out.layout.world(); ++r) {
    const RankCoord c = out.layout.coord(r);
    out.program_of_rank[r] = static_cast<uint32_t>(c.pp * CP + c.dp % CP);
  }

  out.model_flops_per_iteration = flops / static_cast<double>(job.options.iterations);
  return out;
}

double narayanan_model_flops(const ModelSpec& m, int64_t global_batch) {
  const double B = static_cast<double>(global_batch);
  const double s = static_cast<double>(m.seq_len);
  const double l = static_cast<double>(m.layers);
  const double h = static_cast<double>(m.hidden);
  const double V = static_cast<double>(m.vocab);
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

} // namespace twinscale::schedules
