// lower(): a job → per-pipeline-rank programs (shared by the tp × dp ranks of a stage;
// with context parallelism one per (pipeline rank, cp rank), program pp·cp + cp_rank),
// model FLOPs and memory per stage. The pieces: pipeline.cpp (pass order),
// detail/layer_ops.cpp (a layer's ops), detail/stage_lowering.cpp (p2p, DP/ZeRO,
// optimizer, data), memory.cpp (memory per stage).
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <thread>

#include "common/helper_thread.hpp"
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

  double flops = 0;
  const double ranks_per_program = static_cast<double>(job.parallel.tp * job.parallel.dp);
  // Programs in order, each lowered after its predecessor on the same thread (whose
  // sizes bound its vectors), and its model FLOPs summed right after (its ops still in the
  // caches). With a helper thread, the caller lowers programs 0, 1, … with `names` as a
  // plain loop would, and the helper the last ones, from the top down, with a table of its
  // own; its programs' names are then interned in program and op order, which numbers
  // every name as the plain loop does.
  const auto count = static_cast<size_t>(P * CP);
  out.programs.resize(count);
  std::vector<double> program_flops(count, 0.0);
  std::vector<char> helper_named(count, 0);
  detail::NameTable names, helper_names;
  const std::thread::id caller = std::this_thread::get_id();
  const Program* caller_last = nullptr;
  const Program* helper_last = nullptr;
  for_each_index_with_helper(count, target.helper_thread, [&](size_t i) {
    const bool mine = std::this_thread::get_id() == caller;
    const Program*& last = mine ? caller_last : helper_last;
    Program& program = out.programs[i];
    program = detail::StageLowering(job, static_cast<int64_t>(i) / CP, static_cast<int64_t>(i) % CP,
                                    mine ? names : helper_names, target.replay_layers)
                  .run(last);
    last = &program;
    helper_named[i] = mine ? 0 : 1;
    double f = 0;
    for (const Op& op : program.ops)
      if ((op.kind == OpKind::Gemm || op.kind == OpKind::Attention) && op.labels.phase != Phase::Recompute)
        f += op.flops;
    program_flops[i] = f;
  });
  const std::vector<std::string> helper_table = helper_names.take();
  std::vector<uint32_t> renumbered(helper_table.size(), UINT32_MAX);
  for (size_t i = 0; i < count; ++i) {
    if (helper_named[i] != 0)
      for (Op& op : out.programs[i].ops) {
        uint32_t& id = renumbered[op.name];
        if (id == UINT32_MAX) id = names.intern(helper_table[op.name]);
        op.name = id;
      }
    flops += program_flops[i] * ranks_per_program;
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
