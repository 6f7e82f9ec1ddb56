// Software-stack and model facts of the lowering: dropout as a model fact, rotary
// embeddings fused or eager, eager SwiGLU, separate projections, FSDP2's copy-out, the
// fp32 cross entropy, the host time per module call (carried by the schedule), the
// Megatron-LM stacks' fp32 main gradients with fused accumulation, NeMo's 16-bit master
// remainders, and an overlapped GEMM's chunks marked with their count.
#include <catch2/catch.hpp>

#include <initializer_list>
#include <map>
#include <sstream>
#include <string>

#include "config/job_file.hpp"
#include "config/key_overrides.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_json.hpp"
#include "tests/schedules/check_valid.hpp"
#include "tests/schedules/op_counts.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

namespace {
const auto names_in = twinscale::schedules::test::count_names;
double flops_of(const Schedule& s, const Program& p, OpKind kind) {
  double f = 0;
  for (const Op& op : p.ops)
    if (op.kind == kind) f += op.flops;
  return f;
}
/// tiny-1f1b on software stack `stack`, with further KEY=VALUE edits.
JobSpec tiny_on(const std::string& stack, std::initializer_list<const char*> edits = {}) {
  config::JobEdits e;
  e.set.push_back(config::parse_key_override("software=" + stack));
  for (const char* kv : edits) e.set.push_back(config::parse_key_override(kv));
  return config::load_job_preset("tiny-1f1b", e);
}
/// Separate main-gradient additions after wgrad GEMMs (unfused gradient accumulation).
int accumulate_kernels(const Schedule& s) {
  int n = 0;
  for (const Program& p : s.programs)
    for (const Op& op : p.ops) n += s.names[op.name].ends_with(".accumulate") ? 1 : 0;
  return n;
}
JobSpec llama_like() {
  JobSpec job = config::load_job_preset("tiny-1f1b");
  job.model.mlp = MlpKind::SwiGlu;
  job.model.norm = NormKind::RmsNorm;
  job.model.rotary = true;
  job.model.untied_embeddings = true;
  return job;
}
} // namespace

TEST_CASE("stack facts: dropout 0 runs no dropout kernel and unfused attention skips the mask passes",
          "[schedules][stack]") {
  JobSpec job = config::load_job_preset("tiny-1f1b");
  const Schedule with = lower(job);
  const auto fwd = names_in(with, with.programs[0], Phase::Forward);
  REQUIRE(fwd.count("attn.dropout") == 1);
  job.model.dropout = 0;
  const Schedule without = lower(job);
  check_valid(without);
  for (const Program& p : without.programs)
    for (const Op& op : p.ops) CHECK(op.kernel != Kernel::Dropout);
  // unfused attention: 4 passes over the scores instead of 6.5 forward
  job.options.operators.flash_attention = false;
  job.model.dropout = 0.1;
  const Schedule unfused = lower(job);
  job.model.dropout = 0;
  const Schedule unfused0 = lower(job);
  double a = 0, b = 0;
  for (const Op& op : unfused.programs[0].ops)
    if (unfused.names[op.name] == "attn.core") a = op.bytes;
  for (const Op& op : unfused0.programs[0].ops)
    if (unfused0.names[op.name] == "attn.core") b = op.bytes;
  REQUIRE(a > 0);
  CHECK(b < a);
}

TEST_CASE("stack facts: rotary embeddings, fused (one kernel per tensor) or eager fp32 (three)", "[schedules][stack]") {
  JobSpec job = llama_like();
  const Schedule fused = lower(job);
  check_valid(fused);
  const auto f = names_in(fused, fused.programs[0], Phase::Forward);
  const auto fb = names_in(fused, fused.programs[0], Phase::Backward);
  const int layers_passes = f.at("attn.core");
  CHECK(f.at("attn.rope.q") == layers_passes);
  CHECK(f.at("attn.rope.k") == layers_passes);
  CHECK(fb.at("attn.rope.q.bwd") == layers_passes);
  job.options.operators.fused_rope = false;
  const Schedule eager = lower(job);
  check_valid(eager);
  const auto e = names_in(eager, eager.programs[0], Phase::Forward);
  for (const char* n : {"attn.rope.q.float", "attn.rope.q.mul", "attn.rope.q.cast", "attn.rope.k.float"})
    CHECK(e.at(n) == layers_passes);
  CHECK(e.count("attn.rope.q") == 0);
  job.model.rotary = false;
  const Schedule none = lower(job);
  CHECK(names_in(none, none.programs[0], Phase::Forward).count("attn.rope.q") == 0);
}

TEST_CASE("stack facts: unfused RMSNorm is the eager fp32 chain (36 bytes per element forward, 66 backward)",
          "[schedules][stack]") {
  JobSpec job = llama_like();
  job.options.operators.fused_layernorm = true;
  const Schedule fused = lower(job);
  job.options.operators.fused_layernorm = false;
  const Schedule eager = lower(job);
  check_valid(eager);
  const Program& p = eager.programs[0];
  const int layers_passes = names_in(eager, p, Phase::Forward).at("attn.core");
  double elements = 0; // the local activation (tokens on this rank × hidden): the norm ops' shape
  for (const Op& op : p.ops)
    if (eager.names[op.name] == "attn.ln.pow") elements = static_cast<double>(op.shape[0]);
  REQUIRE(elements > 0);
  double fwd = 0, bwd = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
  for (const Op& op : p.ops) {
    if (op.kernel != Kernel::RmsNorm || eager.names[op.name].rfind("attn.ln", 0) != 0) continue;
    const bool backward = op.labels.phase == Phase::Backward;
    (backward ? bwd : fwd) += op.bytes;
    ++(backward ? bwd_kernels : fwd_kernels);
  }
  REQUIRE(fwd_kernels == 6 * layers_passes);
  REQUIRE(bwd_kernels > 0);
  CHECK(fwd / (elements * layers_passes) == Approx(36));
  CHECK(bwd / (elements * bwd_kernels / 7.0) == Approx(66));
  // the fused form: one kernel each way, 4 bytes per element forward
  for (const Op& op : fused.programs[0].ops)
    if (fused.names[op.name] == "attn.ln") CHECK(op.bytes == Approx(4 * elements));
}

TEST_CASE("stack facts: torchtitan's per-op checkpointing re-runs every other matmul and no attention kernel",
          "[schedules][stack]") {
  JobSpec job = llama_like();
  job.parallel.tp = 1;
  job.parallel.sequence_parallel = false;
  job.parallel.dp *= 2;
  job.options.operators.fused_qkv = false;
  job.options.operators.fused_gelu = false;
  job.options.recompute = true;
  const Schedule full = lower(job);
  job.options.recompute_saves_alternate_matmuls = true;
  const Schedule op = lower(job);
  check_valid(op);
  const auto recomputed = names_in(op, op.programs[0], Phase::Recompute);
  const auto full_recomputed = names_in(full, full.programs[0], Phase::Recompute);
  const int layers_passes = names_in(op, op.programs[0], Phase::Forward).at("attn.core");
  REQUIRE(full_recomputed.at("attn.q") == layers_passes);
  // torchtitan's order: wq wk wv wo w1 w3 w2; the 2nd, 4th and 6th are recomputed
  for (const char* n : {"attn.k", "attn.proj", "mlp.w3"}) CHECK(recomputed.at(n) == layers_passes);
  for (const char* n : {"attn.q", "attn.v", "mlp.w1", "mlp.fc2", "attn.core"}) CHECK(recomputed.count(n) == 0);
  // everything that is not a matmul or the attention kernel runs again
  for (const auto& [name, count] : full_recomputed)
    if (name.rfind("attn.ln", 0) == 0 || name.rfind("mlp.ln", 0) == 0 || name.rfind("attn.rope", 0) == 0 ||
        name.rfind("mlp.silu", 0) == 0)
      CHECK(recomputed.at(name) == count);
  // memory: between full recomputation (the layer input only) and none
  const double op_bytes = estimate_memory(job, 0).activations_bytes;
  job.options.recompute_saves_alternate_matmuls = false;
  const double full_bytes = estimate_memory(job, 0).activations_bytes;
  job.options.recompute = false;
  const double none_bytes = estimate_memory(job, 0).activations_bytes;
  CHECK(full_bytes < op_bytes);
  CHECK(op_bytes < none_bytes);
  // the JSON carries it
  job.options.recompute = true;
  job.options.recompute_saves_alternate_matmuls = true;
  std::stringstream js;
  write_schedule_json(lower(job), js);
  CHECK(read_schedule_json(js, "op.json").job.options.recompute_saves_alternate_matmuls);
}

TEST_CASE("stack facts: eager SwiGLU and separate projections keep the FLOPs of the fused forms",
          "[schedules][stack]") {
  JobSpec job = llama_like();
  job.options.operators.fused_gelu = true;
  const Schedule fused = lower(job);
  job.options.operators.fused_gelu = false;
  job.options.operators.fused_qkv = false;
  const Schedule split = lower(job);
  check_valid(split);
  const auto fwd = names_in(split, split.programs[0], Phase::Forward);
  const auto bwd = names_in(split, split.programs[0], Phase::Backward);
  for (const char* n : {"attn.q", "attn.k", "attn.v", "mlp.w1", "mlp.w3", "mlp.silu", "mlp.mul"})
    CHECK(fwd.count(n) == 1);
  CHECK(fwd.count("attn.qkv") == 0);
  CHECK(fwd.count("mlp.swiglu") == 0);
  for (const char* n : {"attn.q.dgrad", "attn.v.wgrad", "attn.k.dgrad.add", "mlp.w3.dgrad.add", "mlp.silu.bwd"})
    CHECK(bwd.count(n) == 1);
  for (size_t p = 0; p < fused.programs.size(); ++p)
    CHECK(flops_of(split, split.programs[p], OpKind::Gemm) ==
          Approx(flops_of(fused, fused.programs[p], OpKind::Gemm)).epsilon(1e-12));
  // the eager SwiGLU moves more bytes than the fused kernel
  double fused_bytes = 0, eager_bytes = 0;
  for (const Op& op : fused.programs[0].ops)
    if (fused.names[op.name].rfind("mlp.swiglu", 0) == 0) fused_bytes += op.bytes;
  for (const Op& op : split.programs[0].ops) {
    const std::string& n = split.names[op.name];
    if (n.rfind("mlp.silu", 0) == 0 || n.rfind("mlp.mul", 0) == 0) eager_bytes += op.bytes;
  }
  CHECK(eager_bytes > fused_bytes);
  // FP8: the shared input and the projections' weights are cast as the fused GEMM's are
  job.options.gemm_precision = GemmPrecision::Fp8;
  const Schedule split8 = lower(job);
  check_valid(split8);
  job.options.operators.fused_qkv = true;
  const Schedule fused8 = lower(job);
  const auto cast_bytes = [](const Schedule& sch, const std::string& name) {
    double b = 0;
    for (const Op& op : sch.programs[0].ops)
      if (sch.names[op.name] == name) b += op.bytes;
    return b;
  };
  for (const char* n :
       {"attn.qkv.weight.fp8_cast", "mlp.fc1.weight.fp8_cast", "attn.qkv.fp8_cast", "mlp.fc1.fp8_cast"}) {
    INFO(n);
    CHECK(cast_bytes(fused8, n) > 0);
    CHECK(cast_bytes(split8, n) == Approx(cast_bytes(fused8, n)));
  }
  job.options.operators.fused_qkv = false;
  job.model.block = BlockKind::Parallel;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("fused_qkv"));
}

TEST_CASE("stack facts: FSDP2 copies each gathered layer out on the compute stream", "[schedules][stack]") {
  JobSpec job = config::load_job_preset("tiny-fsdp");
  const Schedule plain = lower(job);
  int gathers = 0;
  for (const Op& op : plain.programs[0].ops) gathers += plain.names[op.name] == "fsdp.param.ag";
  REQUIRE(gathers > 0);
  for (const Op& op : plain.programs[0].ops) CHECK(plain.names[op.name] != "fsdp.param.copy_out");
  job.options.fsdp_copy_out = true;
  const Schedule s = lower(job);
  check_valid(s);
  int copies = 0;
  for (const Op& op : s.programs[0].ops)
    if (s.names[op.name] == "fsdp.param.copy_out") {
      ++copies;
      CHECK(op.stream == Stream::Compute);
      CHECK(op.kernel == Kernel::Copy);
      CHECK(op.bytes > 0);
    }
  CHECK(copies == gathers);
}

/// The name of the last compute-stream op before op `i` of the first program ("" if none).
static std::string last_compute_before(const Schedule& s, size_t i) {
  const auto& ops = s.programs[0].ops;
  for (size_t j = i; j-- > 0;)
    if (ops[j].stream == Stream::Compute) return s.names[ops[j].name];
  return "";
}

/// The reduce-input passes `pass` of the first program: each on the compute stream with
/// `bytes_per_gradient` per gradient of its layer, and every FSDP reduce-scatter starting
/// right after one (the latest compute op before it). Returns (passes, reduce-scatters).
static std::pair<int, int> check_reduce_input(const Schedule& s, const std::string& pass, double bytes_per_gradient) {
  const auto& ops = s.programs[0].ops;
  int passes = 0, reductions = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const std::string& name = s.names[ops[i].name];
    if (name == pass) {
      ++passes;
      CHECK(ops[i].stream == Stream::Compute);
      CHECK(ops[i].kernel == Kernel::Copy);
      CHECK(ops[i].bytes == Approx(bytes_per_gradient * static_cast<double>(ops[i].shape[0])));
    }
    if (name == "fsdp.grad.rs") {
      ++reductions;
      CHECK(last_compute_before(s, i) == pass);
    }
  }
  return {passes, reductions};
}

TEST_CASE("stack facts: FSDP2 copies each layer's gradients into the reduce input before the compute stream "
          "goes on",
          "[schedules][stack]") {
  JobSpec job = config::load_job_preset("tiny-fsdp");
  const Schedule plain = lower(job);
  for (const Op& op : plain.programs[0].ops) CHECK(plain.names[op.name] != "fsdp.grad.copy_in");
  job.options.fsdp_grad_copy_in = true;
  job.options.grad_reduce_fp32 = true;
  const Schedule s = lower(job);
  check_valid(s);
  // bf16 gradients read, fp32 written: 6 bytes per gradient; the reduce-scatter starts
  // after its layer's copy
  const auto [copies, reductions] = check_reduce_input(s, "fsdp.grad.copy_in", 6.0);
  REQUIRE(reductions > 0);
  CHECK(copies == reductions);
}

TEST_CASE("stack facts: early FSDP2 divides the reduce input in place before the compute stream goes on",
          "[schedules][stack]") {
  JobSpec job = config::load_job_preset("tiny-fsdp");
  job.options.fsdp_grad_copy_in = true;
  job.options.grad_reduce_fp32 = true;
  const Schedule copy_only = lower(job);
  for (const Op& op : copy_only.programs[0].ops) CHECK(copy_only.names[op.name] != "fsdp.grad.predivide");
  job.options.fsdp_grad_predivide = true;
  const Schedule s = lower(job);
  check_valid(s);
  // fp32 read and written in place: 8 bytes per gradient, right after the copy-in
  const auto [divides, reductions] = check_reduce_input(s, "fsdp.grad.predivide", 8.0);
  REQUIRE(reductions > 0);
  CHECK(divides == reductions);
  const auto& ops = s.programs[0].ops;
  for (size_t i = 0; i < ops.size(); ++i)
    if (s.names[ops[i].name] == "fsdp.grad.predivide") {
      REQUIRE(i > 0);
      CHECK(s.names[ops[i - 1].name] == "fsdp.grad.copy_in");
    }
  // without the copy-in the 16-bit gradients are divided in place (2 + 2 bytes each),
  // still right before the reduce-scatter, and nothing is copied
  job.options.fsdp_grad_copy_in = false;
  const Schedule in_place = lower(job);
  check_valid(in_place);
  for (const Op& op : in_place.programs[0].ops) CHECK(in_place.names[op.name] != "fsdp.grad.copy_in");
  const auto [in_place_divides, in_place_reductions] = check_reduce_input(in_place, "fsdp.grad.predivide", 4.0);
  CHECK(in_place_reductions == reductions);
  CHECK(in_place_divides == reductions);
}

TEST_CASE("stack facts: the loss runs in fp32 passes, overlapped GEMM chunks carry their count, the host time "
          "per module survives the schedule's JSON",
          "[schedules][stack]") {
  JobSpec job = config::load_job_preset("tiny-megascale");
  job.options.host_seconds_per_module = 2e-4;
  job.options.operators.fused_rope = false;
  job.model.dropout = 0;
  const Schedule s = lower(job);
  const Program& last = s.programs.back();
  const auto fwd = names_in(s, last, Phase::Forward);
  for (const char* n : {"loss.float", "loss.max", "loss.exp", "loss.sum", "loss.softmax"}) CHECK(fwd.count(n) == 1);
  CHECK(names_in(s, last, Phase::Backward).count("loss.bwd.cast") == 1);
  REQUIRE(job.options.overlap.tp);
  int chunked = 0;
  for (const Op& op : s.programs[0].ops)
    if (op.kernel == Kernel::Gemm && op.shape[3] > 1) {
      ++chunked;
      CHECK(op.shape[3] == job.options.overlap.tp_chunks);
    }
  CHECK(chunked > 0);
  std::stringstream text;
  write_schedule_json(s, text);
  const JobSpec back = read_schedule_json(text, "schedule.json").job;
  CHECK(back.options.host_seconds_per_module == 2e-4);
  CHECK_FALSE(back.options.operators.fused_rope);
  CHECK(back.model.dropout == 0);
}

TEST_CASE("stack facts: Megatron-LM's fp32 main gradients keep 18 bytes per weight and the fused accumulation",
          "[schedules][stack]") {
  // Korthikanti et al.'s Figure 1 counts 18 B per parameter (16-bit weights, fp32 main
  // gradients, fp32 master weights and two Adam moments); Megatron-LM with --bf16 forces
  // fp32 accumulation and reduction; MegaScale inherits it. With fp32 accumulation the
  // wgrad GEMM accumulates in place: no separate add kernel (docs/fidelity.md).
  // tiny-1f1b without ZeRO (the optimizer state and main gradients unsharded), on `stack`
  const auto on = [](const char* stack) { return tiny_on(stack, {"parallel.zero_stage=0"}); };
  for (const char* stack : {"megatron-lm-2022", "megatron-lm-2023", "megascale"}) {
    INFO(stack);
    const JobSpec job = on(stack);
    CHECK(job.options.grad_reduce_fp32);
    CHECK(job.options.grad_accumulation_fusion);
    const MemoryEstimate m = estimate_memory(job, 1);
    const double weights = m.parameters_bytes / 2; // BF16 parameters
    CHECK((m.parameters_bytes + m.gradients_bytes + m.optimizer_bytes) / weights == Approx(18.0));
    CHECK(accumulate_kernels(lower(job)) == 0);
  }
  // SC'21's --fp16 without --accumulate-allreduce-grads-in-fp32: 16 B, and the add kernel
  const JobSpec sc21 = on("megatron-lm-2021");
  CHECK_FALSE(sc21.options.grad_reduce_fp32);
  CHECK_FALSE(sc21.options.grad_accumulation_fusion);
  const MemoryEstimate m = estimate_memory(sc21, 1);
  CHECK((m.parameters_bytes + m.gradients_bytes + m.optimizer_bytes) / (m.parameters_bytes / 2) == Approx(16.0));
  CHECK(accumulate_kernels(lower(sc21)) > 0);
}

TEST_CASE("stack facts: NeMo's distributed Adam keeps 16-bit remainders of the fp32 master weights",
          "[schedules][stack]") {
  // fp32 optimizer over a bf16 model: store_params False, store_param_remainders True
  // (NeMo megatron_base_model.py setup_optimization): 2 + 8 bytes of optimizer state a
  // weight; Megatron's distributed optimizer keeps fp32 master weights, 4 + 8.
  const JobSpec nemo = tiny_on("megatron-core-0.8");
  CHECK(nemo.options.master_weights == MasterWeights::Bf16Remainder);
  const JobSpec megatron = tiny_on("megatron-core-0.8", {"schedule.master_weights=fp32"});
  const MemoryEstimate a = estimate_memory(nemo, 0), b = estimate_memory(megatron, 0);
  CHECK(a.optimizer_bytes / b.optimizer_bytes == Approx(10.0 / 12.0));
  CHECK(a.parameters_bytes == b.parameters_bytes);
  CHECK(a.activations_bytes == b.activations_bytes);
  for (const char* stack : {"megatron-lm-2021", "megatron-lm-2022", "megatron-lm-2023", "megascale", "torchtitan-2024"})
    CHECK(tiny_on(stack).options.master_weights == MasterWeights::Fp32);
  CHECK_THROWS_WITH(tiny_on("megatron-core-0.8", {"schedule.master_weights=fp16"}), Catch::Contains("bf16_remainder"));
}

TEST_CASE("stack facts: PyTorch's foreach AdamW moves 80 bytes per element and clip_grad_norm_ always scales",
          "[schedules][stack]") {
  // torchtitan's optimizer (AdamW(foreach=True), clip_grad_norm_(foreach=True)) against the
  // fused kernels of the Megatron stacks: the same step, its traffic and one more pass
  CHECK(tiny_on("torchtitan-2024").options.optimizer_kernels == OptimizerKernels::Foreach);
  for (const char* stack :
       {"megatron-lm-2021", "megatron-lm-2022", "megatron-lm-2023", "megascale", "megatron-core-0.8"})
    CHECK(tiny_on(stack).options.optimizer_kernels == OptimizerKernels::Fused);
  JobSpec job = config::load_job_preset("tiny-fsdp");
  REQUIRE(job.options.optimizer_kernels == OptimizerKernels::Fused);
  const Schedule fused = lower(job);
  job.options.optimizer_kernels = OptimizerKernels::Foreach;
  const Schedule foreach = lower(job);
  check_valid(foreach);
  REQUIRE(fused.programs.size() == foreach.programs.size());
  for (size_t p = 0; p < fused.programs.size(); ++p) {
    const auto& a = fused.programs[p].ops;
    const auto& b = foreach.programs[p].ops;
    REQUIRE(b.size() == a.size() + 1); // the clip's scaling pass, nothing else
    double a_step = 0, b_step = 0, clip = 0, norm = 0;
    size_t clip_at = 0, step_at = 0;
    for (const Op& op : a)
      if (op.kind == OpKind::OptimizerStep) a_step = op.bytes;
    for (size_t i = 0; i < b.size(); ++i) {
      const std::string& n = foreach.names[b[i].name];
      if (b[i].kind == OpKind::OptimizerStep) b_step = b[i].bytes, step_at = i;
      if (n == "optimizer.grad_clip") clip = b[i].bytes, clip_at = i;
      if (n == "optimizer.grad_norm") norm = b[i].bytes;
    }
    REQUIRE(a_step > 0);
    CHECK(b_step / a_step == Approx(80.0 / 28.0));
    CHECK(clip == Approx(2 * norm)); // read and write each fp32 gradient; the norm reads it
    CHECK(clip_at > 0);
    CHECK(clip_at < step_at); // the step reads the scaled gradients
  }
  CHECK_THROWS_WITH(tiny_on("torchtitan-2024", {"schedule.optimizer=lamb"}), Catch::Contains("optimizer_kernels"));
}
