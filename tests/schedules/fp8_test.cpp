// FP8 GEMMs with Transformer Engine's delayed scaling: which GEMMs run in FP8,
// the casts and their sizes, FP8 all-gathers with sequence parallelism, the amax
// all-reduces per micro-batch and chunk, the FP8 weight copies in the memory estimate,
// and the job-file keys.
#include <catch2/catch.hpp>

#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
JobSpec bf16_of(JobSpec job) {
  job.options.gemm_precision = GemmPrecision::Bf16;
  return job;
}

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }
} // namespace

TEST_CASE("tiny-fp8 lowers and validates, layer GEMMs are FP8, the LM head BF16", "[schedules][fp8]") {
  const JobSpec job = config::load_job_preset("tiny-fp8");
  REQUIRE(job.options.fp8());
  const Schedule s = lower(job);
  CHECK(validate(s).empty());
  int fp8 = 0, bf16 = 0;
  for (const Program& p : s.programs)
    for (const Op& op : p.ops) {
      if (op.kind != OpKind::Gemm) continue;
      const std::string& name = s.names[op.name];
      if (starts_with(name, "lm_head")) {
        CHECK(op.dtype == DType::BF16);
        ++bf16;
      } else {
        INFO(name);
        CHECK(op.dtype == DType::FP8);
        ++fp8;
      }
    }
  CHECK(fp8 > 0);
  CHECK(bf16 > 0);
  const Schedule b = lower(bf16_of(job));
  for (const Program& p : b.programs)
    for (const Op& op : p.ops) CHECK(op.dtype != DType::FP8);
}

TEST_CASE("FP8 casts: weights on the first micro-batch only, inputs every time, halved GEMM inputs",
          "[schedules][fp8]") {
  const JobSpec job = config::load_job_preset("tiny-fp8");
  const Schedule s = lower(job);
  const Program& p = s.program(0); // pp rank 0: layers 0-1
  std::map<int, int> weight_casts_per_mb;
  int input_casts = 0, transposes = 0;
  for (const Op& op : p.ops) {
    const std::string& name = s.names[op.name];
    if (op.kernel != Kernel::Fp8Cast) continue;
    if (name.find(".weight.fp8_cast") != std::string::npos) ++weight_casts_per_mb[op.labels.micro_batch];
    if (name.find(".fp8_cast") != std::string::npos && name.find(".weight.") == std::string::npos) ++input_casts;
    if (name.find(".fp8_transpose") != std::string::npos) ++transposes;
  }
  // 2 layers × 4 GEMM modules, all on micro-batch 0
  REQUIRE(weight_casts_per_mb.size() == 1);
  CHECK(weight_casts_per_mb.begin()->first == 0);
  CHECK(weight_casts_per_mb.begin()->second == 2 * 4);
  // per micro-batch and layer: 4 forward inputs + 4 data-gradient inputs
  const int64_t mbs = job.parallel.micro_batches();
  CHECK(input_casts == mbs * 2 * 8);
  // sequence parallel: the weight gradient transposes the gathered tensor of each of the 4 GEMMs
  CHECK(transposes == mbs * 2 * 4);

  // the QKV GEMM reads FP8 input and weights: (m·k + k·n)·1 + m·n·2 bytes
  const Schedule b = lower(bf16_of(job));
  auto first_gemm = [](const Schedule& sch, const char* name) {
    for (const Op& op : sch.program(0).ops)
      if (sch.names[op.name] == name) return op;
    FAIL(name);
    return Op{};
  };
  const Op q8 = first_gemm(s, "attn.qkv"), q16 = first_gemm(b, "attn.qkv");
  CHECK(q8.flops == q16.flops);
  const double m = static_cast<double>(q8.shape[0]), n = static_cast<double>(q8.shape[1]),
               k = static_cast<double>(q8.shape[2]);
  CHECK(q8.bytes == Approx(m * k + k * n + 2 * m * n));
  CHECK(q16.bytes == Approx(2 * (m * k + k * n + m * n)));
  // with sequence parallelism the all-gather feeding an FP8 GEMM moves FP8: half the bytes
  const Op ag8 = first_gemm(s, "attn.qkv.ag"), ag16 = first_gemm(b, "attn.qkv.ag");
  CHECK(ag8.bytes == Approx(ag16.bytes / 2));
}

TEST_CASE("FP8 amax all-reduces: per micro-batch and chunk, forward and backward, over TP then DP",
          "[schedules][fp8]") {
  JobSpec job = config::load_job_preset("tiny-fp8");
  const Schedule s = lower(job);
  const Program& p = s.program(0);
  std::map<std::string, int> count;
  std::map<std::string, double> bytes;
  for (const Op& op : p.ops) {
    const std::string& name = s.names[op.name];
    if (!starts_with(name, "fp8.amax")) continue;
    ++count[name];
    bytes[name] = op.bytes;
    if (op.is_collective()) {
      CHECK(op.kind == OpKind::AllReduce);
      CHECK(op.dtype == DType::FP32);
      CHECK(op.group == (name.find(".tp.") != std::string::npos ? GroupKind::Tp : GroupKind::Dp));
      // the amax group is a communicator of its own: never queued on the DP stream behind
      // the gradient reduce-scatters and parameter all-gathers
      CHECK(op.stream == Stream::TpComm);
    }
  }
  const int mbs = static_cast<int>(job.parallel.micro_batches());
  for (const char* n : {"fp8.amax.fwd.tp.ar", "fp8.amax.fwd.dp.ar", "fp8.amax.fwd.scale_update", "fp8.amax.bwd.tp.ar",
                        "fp8.amax.bwd.dp.ar", "fp8.amax.bwd.scale_update"}) {
    INFO(n);
    CHECK(count[n] == mbs);
  }
  // 2 layers × 4 modules × (3 forward | 2 backward) fp32 amaxes
  CHECK(bytes["fp8.amax.fwd.tp.ar"] == Approx(2 * 4 * 3 * 4));
  CHECK(bytes["fp8.amax.bwd.dp.ar"] == Approx(2 * 4 * 2 * 4));

  job.options.fp8_amax_reduction = Fp8AmaxReduction::Tp; // Megatron --tp-only-amax-red
  const Schedule t = lower(job);
  CHECK(validate(t).empty());
  for (const Op& op : t.program(0).ops)
    if (op.is_collective() && starts_with(t.names[op.name], "fp8.amax")) CHECK(op.group == GroupKind::Tp);
}

TEST_CASE("FP8 on a MoE model: expert GEMMs in FP8, a valid schedule", "[schedules][fp8]") {
  JobSpec job = config::load_job_preset("tiny-moe");
  job.options.gemm_precision = GemmPrecision::Fp8;
  const Schedule s = lower(job);
  CHECK(validate(s).empty());
  bool expert = false, router_bf16 = true;
  for (const Program& p : s.programs)
    for (const Op& op : p.ops) {
      const std::string& name = s.names[op.name];
      if (op.kind == OpKind::Gemm && starts_with(name, "moe.expert")) expert |= op.dtype == DType::FP8;
      if (op.kind == OpKind::Gemm && starts_with(name, "moe.router")) router_bf16 &= op.dtype == DType::BF16;
    }
  CHECK(expert);
  CHECK(router_bf16);
}

TEST_CASE("the memory estimate counts the FP8 weight copies and their transposes", "[schedules][fp8]") {
  const JobSpec job = config::load_job_preset("tiny-fp8");
  for (int64_t stage = 0; stage < job.parallel.pp; ++stage) {
    const MemoryEstimate f = estimate_memory(job, stage), b = estimate_memory(bf16_of(job), stage);
    double layers = 0;
    const int64_t per_stage = job.model.layers / job.parallel.pp;
    for (int64_t l = stage * per_stage; l < (stage + 1) * per_stage; ++l) layers += layer_parameter_count(job, l);
    CHECK(f.parameters_bytes - b.parameters_bytes == Approx(2 * layers));
  }
}

TEST_CASE("FP8 activations: the saved GEMM inputs are FP8 copies (tiny-fp8, exact)", "[schedules][fp8]") {
  // tiny-fp8: s 128, b 1, h 256, ffn 512, tp 2 with SP. Per layer and micro-batch the QKV
  // and FC1 inputs (local shards, s·h/t each), the projection input (s·h/t) and the FC2
  // input (s·ffn/t) are kept at 1 B instead of 2: 128·(3·128 + 256) = 81,920 B less.
  // 1F1B with 2 stages and 4 micro-batches keeps 2 passes in flight on stage 0, 1 on
  // stage 1; 2 layers per stage. The weights' FP8 copies are the other test's.
  const JobSpec job = config::load_job_preset("tiny-fp8");
  const double per_layer = 128.0 * (3 * 128 + 256);
  for (int64_t stage = 0; stage < job.parallel.pp; ++stage) {
    INFO("stage " << stage);
    const MemoryEstimate f = estimate_memory(job, stage), b = estimate_memory(bf16_of(job), stage);
    const double in_flight = static_cast<double>(job.parallel.pp - stage);
    CHECK(b.activations_bytes - f.activations_bytes == Approx(in_flight * 2 * per_layer));
    CHECK(f.gradients_bytes == b.gradients_bytes);
    CHECK(f.optimizer_bytes == b.optimizer_bytes);
  }
}

TEST_CASE("FP8 activations: llama3-70b per-rank memory, FP8 against BF16", "[schedules][fp8]") {
  // TP8 with SP, no recomputation, no dropout: a layer keeps in BF16 (2 B an element, all
  // split over TP) its two norm inputs and two GEMM inputs (4·2h), Q, K, V and the
  // attention output (2·(h + 2·1024 + h), 8 of 64 heads for K and V) and the eager SwiGLU's
  // gate, up, silu and product (4·2·ffn); FP8 keeps the QKV, projection, FC1 and FC2
  // inputs at 1 B: (3h + ffn) less, (3·8192 + 28672) / 331,776 = 16.0 % of a layer.
  JobSpec job = config::load_job_preset("llama3-70b");
  job.options.gemm_precision = GemmPrecision::Fp8;
  REQUIRE_FALSE(job.options.operators.fused_gelu);
  const double layer = 8.0 * 8192 + 2.0 * (8192 + 2 * 1024 + 8192) + 8.0 * 28672;
  const double share = (3.0 * 8192 + 28672) / layer;
  for (int64_t stage = 0; stage < job.parallel.pp; ++stage) {
    INFO("stage " << stage);
    const MemoryEstimate f = estimate_memory(job, stage), b = estimate_memory(bf16_of(job), stage);
    // the last stage also keeps one micro-batch of fp32 logits, the same in both
    const double logits = stage == job.parallel.pp - 1 ? 8192.0 * 128256 / 8 * 4 : 0.0;
    CHECK((b.activations_bytes - f.activations_bytes) / (b.activations_bytes - logits) == Approx(share));
    // per rank: the FP8 weight copies add, the FP8 activations take off (net −0.7 GiB on
    // stage 0, which holds the most passes in flight; +0.5 GiB on stage 3)
    CHECK(f.parameters_bytes > b.parameters_bytes);
    CHECK(f.total_bytes() - b.total_bytes() ==
          Approx((f.parameters_bytes - b.parameters_bytes) - (b.activations_bytes - f.activations_bytes)));
    std::printf("llama3-70b stage %lld per rank: bf16 %.2f GiB (activations %.2f), fp8 %.2f GiB (activations %.2f)\n",
                static_cast<long long>(stage), b.total_bytes() / 1073741824.0, b.activations_bytes / 1073741824.0,
                f.total_bytes() / 1073741824.0, f.activations_bytes / 1073741824.0);
  }
}

TEST_CASE("FP8 job-file keys: precision.gemm and fp8_amax_reduction, errors name the key", "[schedules][fp8]") {
  const std::string base = R"(name = "j"
cluster = "tiny-h100"
[model]
layers = 2
hidden = 64
heads = 4
seq_len = 32
vocab = 128
[parallel]
tp = 2
dp = 2
global_batch = 4
)";
  const JobSpec plain = config::parse_job(base, "job.toml");
  CHECK(!plain.options.fp8());
  const JobSpec f = config::parse_job(base + "[precision]\ngemm = \"fp8\"\nfp8_amax_reduction = \"tp\"\n", "job.toml");
  CHECK(f.options.fp8());
  CHECK(f.options.fp8_amax_reduction == Fp8AmaxReduction::Tp);
  CHECK_THROWS_WITH(config::parse_job(base + "[precision]\ngemm = \"fp16\"\n", "job.toml"),
                    Catch::Contains("gemm") && Catch::Contains("fp8") && Catch::Contains("bf16"));
  CHECK_THROWS_WITH(config::parse_job(base + "[precision]\nfp8_amax_reduction = \"tp\"\n", "job.toml"),
                    Catch::Contains("fp8_amax_reduction") && Catch::Contains("gemm = \"fp8\""));
  // the schedule file keeps the precision (and a BF16 one has no precision key)
  const auto to_json = [](const Schedule& x) {
    std::ostringstream os;
    write_schedule_json(x, os);
    return os.str();
  };
  const Schedule s = lower(config::load_job_preset("tiny-fp8"));
  std::istringstream in(to_json(s));
  const Schedule back = read_schedule_json(in, "s.json");
  CHECK(back.job.options.fp8());
  CHECK(to_json(back) == to_json(s));
  CHECK(job_to_json(bf16_of(s.job)).find("precision") == std::string::npos);
  CHECK(job_to_json(s.job).find("\"fp8_amax_reduction\":\"tp-dp\"") != std::string::npos);
}
