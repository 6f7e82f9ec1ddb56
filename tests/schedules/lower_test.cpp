// Lowering: program sharing, op shapes and counts, options, FLOPs and memory.
#include <catch2/catch.hpp>

#include <map>
#include <set>

#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/stage_layers.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/check_valid.hpp"
#include "tests/schedules/op_counts.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

using twinscale::schedules::test::count_names;

namespace {
int count_kind(const Program& p, OpKind k) {
  int n = 0;
  for (const Op& op : p.ops) n += op.kind == k;
  return n;
}
} // namespace

TEST_CASE("tiny presets lower into one program per stage and validate", "[schedules][lower]") {
  for (const char* name : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale"}) {
    INFO(name);
    const auto job = config::load_job_preset(name);
    const Schedule s = lower(job);
    CHECK(s.world() == 8);
    CHECK(s.programs.size() == 2);
    for (int64_t r = 0; r < 8; ++r) CHECK(s.program_of_rank[r] == s.layout.coord(r).pp);
    check_valid(s);
  }
}

TEST_CASE("model FLOPs match Narayanan's closed form", "[schedules][lower][flops]") {
  for (const char* name : {"tiny-1f1b", "tiny-interleaved"}) {
    auto job = config::load_job_preset(name);
    const Schedule s = lower(job);
    const double expected = narayanan_model_flops(job.model, job.parallel.global_batch);
    // Exact: the formula counts the same GEMMs, the full s² attention and the LM head;
    // embedding lookups, norms and elementwise ops are excluded on both sides.
    CHECK(s.model_flops_per_iteration == Approx(expected).epsilon(1e-12));
  }
  // recomputation is not model FLOPs; more iterations do not change the per-iteration sum
  auto job = config::load_job_preset("tiny-interleaved");
  job.options.recompute = true;
  job.options.iterations = 3;
  const Schedule s = lower(job);
  CHECK(s.model_flops_per_iteration ==
        Approx(narayanan_model_flops(job.model, job.parallel.global_batch)).epsilon(1e-12));
}

TEST_CASE("sliding-window attention costs s·w instead of s²", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  const Schedule dense = lower(job);
  job.model.attention = AttentionKind::Sliding;
  job.model.window = 32;
  const Schedule sliding = lower(job);
  auto attention_flops = [](const Schedule& s) {
    double f = 0;
    for (const Op& op : s.programs[0].ops)
      if (op.kind == OpKind::Attention) f += op.flops;
    return f;
  };
  CHECK(attention_flops(sliding) == Approx(attention_flops(dense) * 32.0 / 128.0));
  int attention_ops = 0;
  for (const Op& op : sliding.programs[0].ops)
    if (op.kind == OpKind::Attention) {
      CHECK(op.shape[3] == 32);
      ++attention_ops;
    }
  CHECK(attention_ops > 0);
}

TEST_CASE("GEMM shapes split n or k by tp", "[schedules][lower]") {
  const auto job = config::load_job_preset("tiny-1f1b"); // h 256, tp 2, s 128, mb 1
  const Schedule s = lower(job);
  std::map<std::string, std::array<int64_t, 4>> shapes;
  for (const Op& op : s.programs[0].ops)
    if (op.kind == OpKind::Gemm) shapes[s.names[op.name]] = op.shape;
  CHECK(shapes["attn.qkv"] == std::array<int64_t, 4>{128, 384, 256, 0});
  CHECK(shapes["attn.proj"] == std::array<int64_t, 4>{128, 256, 128, 0});
  CHECK(shapes["mlp.fc1"] == std::array<int64_t, 4>{128, 512, 256, 0});
  CHECK(shapes["mlp.fc2"] == std::array<int64_t, 4>{128, 256, 512, 0});
  CHECK(shapes["mlp.fc1.wgrad"] == std::array<int64_t, 4>{512, 256, 128, 0});
}

TEST_CASE("fused kernels replace chains of small kernels", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  const Schedule unfused = lower(job);
  job.options.operators.flash_attention = job.options.operators.fused_layernorm = job.options.operators.fused_gelu =
      true;
  const Schedule fused = lower(job);
  const auto a = count_names(unfused, unfused.programs[0], Phase::Forward);
  const auto b = count_names(fused, fused.programs[0], Phase::Forward);
  CHECK(a.count("attn.ln.mean") == 1);
  CHECK(b.count("attn.ln.mean") == 0);
  CHECK(b.at("attn.ln") == a.at("attn.ln.norm"));
  CHECK(a.count("mlp.bias_add") == 1);
  CHECK(b.count("mlp.bias_add") == 0);
  CHECK(fused.programs[0].ops.size() < unfused.programs[0].ops.size());
  double unfused_bytes = 0, fused_bytes = 0;
  for (const Op& op : unfused.programs[0].ops)
    if (!op.is_communication()) unfused_bytes += op.bytes;
  for (const Op& op : fused.programs[0].ops)
    if (!op.is_communication()) fused_bytes += op.bytes;
  CHECK(fused_bytes < unfused_bytes);
  bool flash = false;
  for (const Op& op : fused.programs[0].ops) flash |= op.kernel == Kernel::FlashAttention2;
  CHECK(flash);
}

TEST_CASE("sequence parallelism: all-gather/reduce-scatter, without: all-reduce", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  const Schedule sp = lower(job);
  job.parallel.sequence_parallel = false;
  const Schedule no_sp = lower(job);
  int sp_ar = 0, sp_rs = 0, nosp_rs = 0, nosp_ag = 0;
  for (const Op& op : sp.programs[0].ops)
    if (op.group == GroupKind::Tp && op.labels.layer >= 0) {
      sp_ar += op.kind == OpKind::AllReduce;
      sp_rs += op.kind == OpKind::ReduceScatter;
    }
  for (const Op& op : no_sp.programs[0].ops)
    if (op.group == GroupKind::Tp && op.is_collective()) {
      nosp_rs += op.kind == OpKind::ReduceScatter;
      nosp_ag += op.kind == OpKind::AllGather;
    }
  CHECK(sp_ar == 0);
  CHECK(sp_rs > 0);
  CHECK(nosp_rs == 0);
  CHECK(nosp_ag == 0);
  // pipeline messages are sharded by tp with sequence parallelism
  double sp_send = 0, nosp_send = 0;
  for (const Op& op : sp.programs[0].ops)
    if (op.kind == OpKind::Send) sp_send = op.bytes;
  for (const Op& op : no_sp.programs[0].ops)
    if (op.kind == OpKind::Send) nosp_send = op.bytes;
  CHECK(nosp_send == 128.0 * 256 * 2);
  CHECK(sp_send == nosp_send / 2);
}

TEST_CASE("TP overlap splits GEMM + collective into chunks linked by dependencies", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.options.overlap.tp = true;
  job.options.overlap.tp_chunks = 4;
  const Schedule s = lower(job);
  const Program& p = s.programs[0];
  // first layer forward: four attn.proj GEMM chunks, each followed by its reduce-scatter
  std::vector<size_t> gemms, rs;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].labels.layer != 0 || p.ops[i].labels.micro_batch != 0 || p.ops[i].labels.phase != Phase::Forward)
      continue;
    if (s.names[p.ops[i].name] == "attn.proj") gemms.push_back(i);
    if (s.names[p.ops[i].name] == "attn.proj.rs") rs.push_back(i);
  }
  REQUIRE(gemms.size() == 4);
  REQUIRE(rs.size() == 4);
  for (size_t c = 0; c < 4; ++c) {
    CHECK(p.ops[gemms[c]].shape[0] == 32);
    CHECK(p.ops[rs[c]].stream == Stream::TpComm);
    const auto deps = p.deps_of(rs[c]);
    CHECK(std::find(deps.begin(), deps.end(), gemms[c]) != deps.end());
    if (c + 1 < 4) CHECK(rs[c] < gemms[c + 1]); // chunk c's collective runs during GEMM c+1
  }
}

TEST_CASE("parallel block: one LayerNorm, attention RS overlaps MLP GEMMs", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.model.block = BlockKind::Parallel;
  const Schedule s = lower(job);
  const auto fwd = count_names(s, s.programs[0], Phase::Forward);
  CHECK(fwd.count("attn.ln.norm") == 0);
  CHECK(fwd.at("ln.norm") == fwd.at("attn.qkv"));
  const Program& p = s.programs[0];
  // the MLP fc1 GEMM after attn.proj.rs must not depend on it
  const auto fc1_waits_for_rs = [&]() {
    for (size_t i = 0; i < p.ops.size(); ++i) {
      if (s.names[p.ops[i].name] != "attn.proj.rs") continue;
      size_t j = i + 1;
      while (j < p.ops.size() && s.names[p.ops[j].name] != "mlp.fc1") ++j;
      if (j == p.ops.size()) FAIL("no mlp.fc1 op after attn.proj.rs");
      const auto deps = p.deps_of(j);
      return std::find(deps.begin(), deps.end(), i) != deps.end();
    }
    FAIL("no attn.proj.rs op");
    return true;
  };
  CHECK_FALSE(fc1_waits_for_rs());
  CHECK(s.model_flops_per_iteration ==
        Approx(narayanan_model_flops(job.model, job.parallel.global_batch)).epsilon(1e-12));
}

TEST_CASE("ZeRO stages place DP collectives as specified", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.zero_stage = 0;
  Schedule s = lower(job);
  CHECK(count_kind(s.programs[0], OpKind::AllReduce) > 0);
  int dp_ar = 0;
  for (const Op& op : s.programs[0].ops) dp_ar += op.group == GroupKind::Dp && op.kind == OpKind::AllReduce;
  CHECK(dp_ar == 2); // one per model chunk
  job.parallel.zero_stage = 1;
  s = lower(job);
  int rs = 0, ag = 0;
  for (const Op& op : s.programs[0].ops) {
    rs += op.group == GroupKind::Dp && op.kind == OpKind::ReduceScatter;
    ag += op.group == GroupKind::Dp && op.kind == OpKind::AllGather;
  }
  CHECK(rs == 2);
  CHECK(ag == 2);
  // ZeRO-2 with overlap: the first all-gather is the first DP op, before any compute
  job.parallel.zero_stage = 2;
  job.options.overlap.dp = true;
  s = lower(job);
  const Program& p = s.programs[0];
  size_t first_ag = SIZE_MAX, first_compute = SIZE_MAX;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (first_ag == SIZE_MAX && p.ops[i].kind == OpKind::AllGather && p.ops[i].group == GroupKind::Dp) first_ag = i;
    if (first_compute == SIZE_MAX && p.ops[i].stream == Stream::Compute && p.ops[i].kind != OpKind::Elementwise)
      first_compute = i;
  }
  CHECK(first_ag < first_compute);
  CHECK(p.ops[first_ag].priority > 0);
  CHECK(validate(s).empty());
}

TEST_CASE("LAMB adds the trust-ratio norm all-reduce, recompute adds Phase::Recompute", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.options.optimizer = OptimizerKind::Lamb;
  job.options.recompute = true;
  const Schedule s = lower(job);
  const auto opt = count_names(s, s.programs[0], Phase::Optimizer);
  CHECK(opt.count("optimizer.lamb.update") == 1);
  CHECK(opt.count("optimizer.lamb.norms.ar") == 1);
  const auto rec = count_names(s, s.programs[0], Phase::Recompute);
  CHECK(rec.at("attn.qkv") == 2 * 4); // 2 layers × 4 micro-batches on stage 0
  CHECK(validate(s).empty());
}

TEST_CASE("async data loading moves the load to the data stream", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.options.iterations = 2;
  Schedule s = lower(job);
  int sync_loads = 0;
  for (const Op& op : s.programs[0].ops)
    if (op.kernel == Kernel::DataLoad) {
      CHECK(op.stream == Stream::Compute);
      ++sync_loads;
    }
  CHECK(sync_loads == 2);
  job.options.async_data_loading = true;
  s = lower(job);
  int loads = 0;
  for (const Op& op : s.programs[0].ops)
    if (op.kernel == Kernel::DataLoad) {
      CHECK(op.stream == Stream::Data);
      CHECK(op.labels.phase == Phase::Data);
      ++loads;
    }
  CHECK(loads == 2);
  CHECK(validate(s).empty());
}

TEST_CASE("memory: recompute and flash attention shrink activations, overflow names the stage",
          "[schedules][lower][memory]") {
  auto job = config::load_job_preset("gpt-175b-megatron");
  const auto base = estimate_memory(job, 0);
  job.options.recompute = true;
  CHECK(estimate_memory(job, 0).activations_bytes < base.activations_bytes);
  job.options.recompute = false;
  job.options.operators.flash_attention = true;
  CHECK(estimate_memory(job, 0).activations_bytes < base.activations_bytes);
  job.parallel.zero_stage = 0;
  CHECK(estimate_memory(job, 0).optimizer_bytes > base.optimizer_bytes);

  auto big = config::load_job_preset("tiny-1f1b");
  big.model.hidden = 8192;
  big.model.ffn_hidden = 4 * 8192;
  big.model.heads = 64;
  big.model.layers = 64;
  big.parallel.tp = 1;
  big.parallel.pp = 2;
  big.parallel.dp = 1;
  big.parallel.global_batch = 4;
  try {
    lower(big);
    FAIL("an oversized model lowered");
  } catch (const JobError& e) {
    CHECK_THAT(e.what(), Catch::Contains("pipeline stage 0") && Catch::Contains("GB"));
  }
  LoweringTarget unchecked;
  unchecked.check_memory = false;
  const Schedule s = lower(big, unchecked);
  const auto v = validate(s);
  REQUIRE(!v.empty());
  CHECK(v[0].kind == ViolationKind::Memory);
}

TEST_CASE("interleaved PP wraps from the last pipeline rank to the first", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.pp = 4;
  job.parallel.dp = 1;
  job.model.layers = 8;
  job.parallel.global_batch = 4;
  const Schedule s = lower(job);
  const Program& last = s.programs[3];
  const Program& first = s.programs[0];
  bool last_sends_to_first = false, first_recvs_from_last = false;
  for (const Op& op : last.ops)
    if (op.kind == OpKind::Send && op.labels.phase == Phase::Forward) {
      CHECK(op.peer == 0);
      CHECK(op.labels.chunk == 0); // chunk 0 of the last rank feeds chunk 1 of rank 0
      last_sends_to_first = true;
    }
  for (const Op& op : first.ops)
    if (op.kind == OpKind::Recv && op.labels.phase == Phase::Forward) {
      CHECK(op.peer == 3);
      CHECK(op.labels.chunk == 1);
      first_recvs_from_last = true;
    }
  CHECK(last_sends_to_first);
  CHECK(first_recvs_from_last);
  // every forward send carries mb·s·h·2/tp bytes (sequence parallel)
  int sends = 0;
  for (const Op& op : first.ops)
    if (op.kind == OpKind::Send) {
      CHECK(op.bytes == 128.0 * 256 * 2 / 2);
      ++sends;
    }
  CHECK(sends > 0);
  CHECK(validate(s).empty());
}

TEST_CASE("PP coupled (Megatron) vs decoupled (M5)", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  auto compute_waits_on_send = [](const Program& p) {
    int n = 0;
    for (size_t i = 0; i < p.ops.size(); ++i)
      for (uint32_t d : p.deps_of(i)) n += p.ops[d].kind == OpKind::Send && !p.ops[i].is_communication();
    return n;
  };
  const Schedule coupled = lower(job);
  CHECK(compute_waits_on_send(coupled.programs[0]) > 0);
  job.options.overlap.pp = true;
  const Schedule decoupled = lower(job);
  CHECK(compute_waits_on_send(decoupled.programs[0]) == 0);
  CHECK(validate(coupled).empty());
  CHECK(validate(decoupled).empty());
}

TEST_CASE("ZeRO-2 without overlap blocks compute on every DP collective", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.zero_stage = 2;
  job.options.overlap.dp = false;
  const Schedule s = lower(job);
  const Program& p = s.programs[0];
  for (size_t i = 0; i < p.ops.size(); ++i) {
    if (p.ops[i].group != GroupKind::Dp || !p.ops[i].is_collective()) continue;
    bool waited = false; // some later compute op depends on it
    for (size_t j = i + 1; j < p.ops.size() && !waited; ++j)
      for (uint32_t d : p.deps_of(j)) waited |= d == i && p.ops[j].stream == Stream::Compute;
    CHECK(waited);
    CHECK(p.ops[i].priority == 0);
  }
  CHECK(validate(s).empty());
}

TEST_CASE("gpt-175b presets lower and validate at 12,288 GPUs", "[schedules][lower][scale]") {
  for (const char* name : {"gpt-175b-megatron", "gpt-175b-megascale"}) {
    INFO(name);
    const auto job = config::load_job_preset(name);
    const Schedule s = lower(job);
    CHECK(s.world() == 12288);
    CHECK(s.programs.size() == 8);
    CHECK(s.model_flops_per_iteration ==
          Approx(narayanan_model_flops(job.model, job.parallel.global_batch)).epsilon(1e-12));
    const auto v = validate(s);
    for (const auto& x : v) INFO(describe(x));
    CHECK(v.empty());
  }
}

TEST_CASE("gpt-530b presets lower and validate", "[schedules][lower][scale][slow]") {
  for (const char* name : {"gpt-530b-megatron", "gpt-530b-megascale"}) {
    INFO(name);
    const auto job = config::load_job_preset(name);
    const Schedule s = lower(job);
    CHECK(s.world() == 11200);
    CHECK(s.programs.size() == 35);
    CHECK(validate(s).empty());
  }
}

TEST_CASE("every option combination on a small job validates", "[schedules][lower][slow]") {
  auto base = config::load_job_preset("tiny-interleaved");
  base.parallel.pp = 4;
  base.parallel.dp = 2;
  base.model.layers = 8;
  base.parallel.global_batch = 16; // 8 micro-batches
  int checked = 0;
  for (int mask = 0; mask < 256; ++mask) {
    auto job = base;
    job.options.pipeline = (mask & 1) ? PipelineKind::Interleaved : PipelineKind::OneFOneB;
    job.parallel.vpp = (mask & 1) ? 2 : 1;
    job.options.overlap.pp = mask & 2;
    job.options.overlap.dp = mask & 4;
    job.options.overlap.tp = mask & 8;
    job.options.overlap.tp_chunks = (mask & 8) ? 2 : 1;
    job.model.block = (mask & 16) ? BlockKind::Parallel : BlockKind::Serial;
    job.parallel.sequence_parallel = mask & 32;
    job.options.recompute = mask & 64;
    job.options.async_data_loading = mask & 128;
    for (int64_t zero = 0; zero <= 2; ++zero) {
      job.parallel.zero_stage = zero;
      job.options.optimizer = zero == 1 ? OptimizerKind::Lamb : OptimizerKind::Adam;
      job.options.iterations = zero == 2 ? 2 : 1;
      const Schedule s = lower(job);
      const auto v = validate(s);
      INFO("mask " << mask << " zero " << zero);
      for (const auto& x : v) INFO(describe(x));
      CHECK(v.empty());
      CHECK(s.model_flops_per_iteration ==
            Approx(narayanan_model_flops(job.model, job.parallel.global_batch)).epsilon(1e-12));
      ++checked;
    }
  }
  CHECK(checked == 768);
}

TEST_CASE("edge pipeline shapes validate: M = P, many chunks, one micro-batch", "[schedules][lower]") {
  struct Shape {
    int64_t pp, vpp, micro_batches;
    bool interleaved;
  };
  for (const Shape& sh : {Shape{3, 2, 3, true}, Shape{4, 3, 4, true}, Shape{2, 4, 2, true}, Shape{4, 1, 1, false},
                          Shape{4, 1, 2, false}, Shape{1, 1, 3, false}, Shape{5, 2, 10, true}}) {
    for (bool overlap : {false, true}) {
      auto job = config::load_job_preset("tiny-1f1b");
      job.parallel.pp = sh.pp;
      job.parallel.vpp = sh.vpp;
      job.parallel.dp = 2;
      job.model.layers = sh.pp * sh.vpp * 2;
      job.parallel.global_batch = 2 * sh.micro_batches;
      job.options.pipeline = sh.interleaved ? PipelineKind::Interleaved : PipelineKind::OneFOneB;
      job.options.overlap = {overlap, overlap, overlap, overlap ? 2 : 1};
      job.parallel.zero_stage = overlap ? 2 : 1;
      job.options.iterations = 2;
      INFO("pp " << sh.pp << " vpp " << sh.vpp << " M " << sh.micro_batches << " overlap " << overlap);
      const Schedule s = lower(job);
      check_valid(s);
    }
  }
}

TEST_CASE("fp32 gradient reduction doubles the DP bytes", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.zero_stage = 0;
  const auto dp_bytes = [](const Schedule& s) {
    double b = 0;
    for (const Op& op : s.programs[0].ops)
      if (op.group == GroupKind::Dp && op.kind == OpKind::AllReduce) b += op.bytes;
    return b;
  };
  const double bf16 = dp_bytes(lower(job));
  job.options.grad_reduce_fp32 = true;
  const Schedule s = lower(job);
  REQUIRE(bf16 > 0);
  CHECK(dp_bytes(s) == Approx(2 * bf16));
  for (const Op& op : s.programs[0].ops)
    if (op.group == GroupKind::Dp && op.kind == OpKind::AllReduce) CHECK(op.dtype == DType::FP32);
  CHECK(validate(s).empty());
}

TEST_CASE("grouped-query attention, SwiGLU and untied embeddings shape the ops", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  const auto shape_of = [](const Schedule& s, const char* name) {
    for (const Op& op : s.programs[0].ops)
      if (s.names[op.name] == name) return op.shape;
    return std::array<int64_t, 4>{0, 0, 0, 0};
  };
  const int64_t h = job.model.hidden, t = job.parallel.tp, f = job.model.ffn_hidden;
  const int64_t hd = h / job.model.heads;
  const Schedule base = lower(job);
  CHECK(shape_of(base, "attn.qkv")[1] == 3 * h / t);
  job.model.kv_heads = job.parallel.tp; // the fewest groups TP allows
  job.model.mlp = MlpKind::SwiGlu;
  job.model.untied_embeddings = true;
  const Schedule s = lower(job);
  CHECK(shape_of(s, "attn.qkv")[1] == (h + 2 * job.model.kv_heads * hd) / t);
  CHECK(shape_of(s, "mlp.fc1")[1] == 2 * f / t);
  CHECK(shape_of(s, "mlp.fc1.wgrad")[0] == 2 * f / t);
  CHECK(count_names(s, s.programs[0], Phase::Forward).count("mlp.swiglu") ==
        (job.options.operators.fused_gelu ? 1 : 0));
  CHECK(count_names(s, s.programs[0], Phase::Forward).count("mlp.silu") == (job.options.operators.fused_gelu ? 0 : 1));
  for (const Program& p : s.programs)
    for (const Op& op : p.ops) CHECK(op.group != GroupKind::Embedding);
  CHECK(validate(s).empty());
  job.model.kv_heads = 3;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("model.kv_heads"));
}

TEST_CASE("squared ReLU: FC1 as wide as the MLP, one compiled kernel each way, GeLU's activation memory",
          "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  const int64_t f = job.model.ffn_hidden, t = job.parallel.tp;
  const double gelu_memory = estimate_memory(job, 0).activations_bytes;
  const Schedule gelu = lower(job);
  const int layer_passes = count_names(gelu, gelu.programs[0], Phase::Forward).at("mlp.gelu");
  job.model.mlp = MlpKind::SquaredRelu;
  const Schedule s = lower(job);
  const auto fwd = count_names(s, s.programs[0], Phase::Forward);
  const auto bwd = count_names(s, s.programs[0], Phase::Backward);
  CHECK(fwd.count("mlp.gelu") == 0);
  CHECK(bwd.count("mlp.gelu.bwd") == 0);
  CHECK(fwd.count("mlp.bias_add") == 0);
  CHECK(fwd.at("mlp.squared_relu") == layer_passes); // one kernel where GeLU ran
  CHECK(bwd.at("mlp.squared_relu.bwd") == layer_passes);
  const double e = static_cast<double>(job.parallel.micro_batch * job.model.seq_len * (f / t));
  for (const Op& op : s.programs[0].ops) {
    if (s.names[op.name] == "mlp.fc1") CHECK(op.shape[1] == f / t);
    if (s.names[op.name] == "mlp.squared_relu") CHECK(op.bytes == Approx(2 * 2 * e));     // read x, write y (bf16)
    if (s.names[op.name] == "mlp.squared_relu.bwd") CHECK(op.bytes == Approx(3 * 2 * e)); // grad and x in, dx out
  }
  // the compiled autograd keeps x, FC2 keeps relu(x)²: GeLU's input and output
  CHECK(estimate_memory(job, 0).activations_bytes == Approx(gelu_memory));
  CHECK(validate(s).empty());
}

TEST_CASE("SC'21 software: unfused main-gradient accumulation and synchronous TP all-reduce", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.sequence_parallel = false;
  REQUIRE(job.parallel.tp > 1);
  const Schedule fused = lower(job);
  const auto fused_bwd = count_names(fused, fused.programs[0], Phase::Backward);
  CHECK(fused_bwd.count("mlp.fc1.wgrad.accumulate") == 0);
  // the input gradient's all-reduce overlaps the wgrad GEMM (no dependency between them)
  const auto wgrad_waits_for_ar = [](const Schedule& s) {
    const Program& p = s.programs[0];
    for (const Op& op : p.ops) {
      if (s.names[op.name] != "attn.qkv.wgrad") continue;
      for (uint32_t d : p.deps_of(op))
        if (s.names[p.ops[d].name] == "attn.qkv.dgrad.ar") return true;
      return false;
    }
    FAIL("no attn.qkv.wgrad op");
    return false;
  };
  CHECK_FALSE(wgrad_waits_for_ar(fused));

  job.options.grad_accumulation_fusion = false;
  job.options.tp_async_allreduce = false;
  const Schedule sc21 = lower(job);
  const auto bwd = count_names(sc21, sc21.programs[0], Phase::Backward);
  // one add kernel per weight-gradient GEMM, as many as the GEMMs
  for (const char* w : {"mlp.fc1.wgrad", "mlp.fc2.wgrad", "attn.proj.wgrad", "attn.qkv.wgrad"}) {
    REQUIRE(bwd.count(w) == 1);
    CHECK(bwd.at(std::string(w) + ".accumulate") == bwd.at(w));
  }
  // the add reads the 16-bit gradient and reads and writes a 16-bit main gradient
  const auto accumulate = std::find_if(sc21.programs[0].ops.begin(), sc21.programs[0].ops.end(),
                                       [&](const Op& op) { return sc21.names[op.name] == "mlp.fc1.wgrad.accumulate"; });
  REQUIRE(accumulate != sc21.programs[0].ops.end());
  CHECK(accumulate->bytes == Approx(6.0 * static_cast<double>(accumulate->shape[0])));
  CHECK(wgrad_waits_for_ar(sc21));
  CHECK(validate(sc21).empty());
}

TEST_CASE("selective recomputation re-runs only the attention core", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.options.recompute = false;
  job.options.selective_recompute = true;
  job.options.operators.flash_attention = false; // scores stored without selective
  const Schedule s = lower(job);
  const auto re = count_names(s, s.programs[0], Phase::Recompute);
  const auto fwd = count_names(s, s.programs[0], Phase::Forward);
  REQUIRE(re.size() == 1);
  CHECK(re.begin()->first == "attn.core");
  CHECK(re.begin()->second == fwd.at("attn.core"));
  CHECK(validate(s).empty());
  // it keeps no score-sized activations: less memory than none, more than full
  auto none = job;
  none.options.selective_recompute = false;
  auto full = none;
  full.options.recompute = true;
  const double sel = estimate_memory(job, 0).activations_bytes;
  CHECK(sel < estimate_memory(none, 0).activations_bytes);
  CHECK(sel > estimate_memory(full, 0).activations_bytes);
}

TEST_CASE("gradient-norm and loss all-reduces and the TP broadcast of inputs", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  REQUIRE(job.parallel.tp > 1);
  REQUIRE(job.parallel.pp > 1);
  const Schedule s = lower(job);
  const int64_t last = job.parallel.pp - 1;
  const auto opt0 = count_names(s, s.programs[0], Phase::Optimizer);
  const auto optl = count_names(s, s.programs[static_cast<size_t>(last)], Phase::Optimizer);
  CHECK(opt0.at("optimizer.grad_norm") == 1);
  CHECK(opt0.at("optimizer.grad_norm.tp.ar") == 1);
  CHECK(opt0.at("optimizer.grad_norm.pp.ar") == 1);
  CHECK(opt0.count("loss.dp.ar") == 0);
  CHECK(optl.at("loss.dp.ar") == (job.parallel.dp > 1 ? 1 : 0));
  // one broadcast of the inputs per micro-batch on the first stage (chunk 0 only)
  const auto fwd0 = count_names(s, s.programs[0], Phase::Forward);
  CHECK(fwd0.at("data.broadcast") == job.parallel.micro_batches());
  CHECK(validate(s).empty());
  // M8: the machine's shared data loader replaces the broadcast
  job.options.async_data_loading = true;
  const Schedule m8 = lower(job);
  CHECK(count_names(m8, m8.programs[0], Phase::Forward).count("data.broadcast") == 0);
  CHECK(validate(m8).empty());
}

TEST_CASE("DP gradient buckets: reduced during the last backward, the same bytes in all", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.parallel.zero_stage = 0;
  job.options.overlap.dp = true;
  const auto dp_reduce = [](const Schedule& s) {
    std::vector<const Op*> out;
    for (const Op& op : s.programs[0].ops)
      if (op.group == GroupKind::Dp && op.kind == OpKind::AllReduce && s.names[op.name] == "dp.grad.ar")
        out.push_back(&op);
    return out;
  };
  const auto total = [](const std::vector<const Op*>& ops) {
    double b = 0;
    for (const Op* op : ops) b += op->bytes;
    return b;
  };
  const Schedule whole = lower(job);
  const auto one = dp_reduce(whole);
  REQUIRE(one.size() == 1);
  job.options.dp_bucket_params = 1; // one bucket per layer
  const Schedule bucketed = lower(job);
  const auto many = dp_reduce(bucketed);
  const auto layers = stage_layers(job, 0).count;
  // one per layer of the stage, and the rest (embedding) at the chunk's end
  REQUIRE(many.size() == static_cast<size_t>(layers) + 1);
  CHECK(total(many) == Approx(total(one)));
  // the first bucket is launched before the last backward's final compute op (it overlaps)
  const Program& p = bucketed.programs[0];
  size_t last_backward = 0;
  for (size_t i = 0; i < p.ops.size(); ++i)
    if (p.ops[i].labels.phase == Phase::Backward && !p.ops[i].is_communication()) last_backward = i;
  CHECK(static_cast<size_t>(many.front() - p.ops.data()) < last_backward);
  check_valid(bucketed);
  // without DP overlap buckets do nothing
  job.options.overlap.dp = false;
  CHECK(dp_reduce(lower(job)).size() == 1);
}

TEST_CASE("recompute_every: only every n-th layer is recomputed", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-1f1b");
  job.options.recompute = true;
  const auto recomputed_layers = [](const Schedule& s) {
    std::set<int32_t> layers;
    for (const Op& op : s.programs[0].ops)
      if (op.labels.phase == Phase::Recompute) layers.insert(op.labels.layer);
    return layers;
  };
  const auto all = recomputed_layers(lower(job));
  job.options.recompute_every = 2;
  const Schedule s = lower(job);
  const auto half = recomputed_layers(s);
  REQUIRE_FALSE(half.empty());
  for (int32_t l : half) CHECK(l % 2 == 0);
  CHECK(half.size() < all.size());
  auto every_layer = job;
  every_layer.options.recompute_every = 1;
  CHECK(estimate_memory(job, 0).activations_bytes > estimate_memory(every_layer, 0).activations_bytes);
  check_valid(s);
}
