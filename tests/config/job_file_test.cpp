// Job files: presets parse, every key is checked, impossible combinations are rejected.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/key_overrides.hpp"
#include "config/presets.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;

namespace {
const char* kTiny = R"(
name = "t"
cluster = "tiny-2tier"
[model]
layers = 4
hidden = 256
heads = 8
seq_len = 128
vocab = 1024
[parallel]
tp = 2
pp = 2
dp = 2
global_batch = 8
)";

std::string replace(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  return text;
}

template <class E>
void expect_error(const std::string& text, const std::string& needle1, const std::string& needle2) {
  try {
    config::parse_job(text, "job.toml");
    FAIL("no error for a bad job");
  } catch (const E& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find(needle1) != std::string::npos);
    CHECK(msg.find(needle2) != std::string::npos);
  }
}
} // namespace

TEST_CASE("every job preset parses and passes check_job", "[config]") {
  const auto names = config::preset_names("jobs");
  REQUIRE(names.size() >= 7);
  for (const auto& n : names) {
    INFO(n);
    const auto job = config::load_job_preset(n);
    CHECK(job.name == n);
  }
}

TEST_CASE("nemotron4-340b: NeMo's 128-GPU layout fits an H100 only with its 16-bit master remainders", "[config]") {
  // The preset: arXiv 2406.11704 Table 2 and the launcher's nemotron_340b.yaml (6,144 GPUs,
  // TP 8 · PP 12 · VP 8). NeMo 24.07's performance table ran it on 128 GPUs (TP 8 · PP 8 ·
  // VP 12, batch 32, FP8): 88.8 GB on stage 0 with fp32 master weights, under the 85.5 GB of
  // an H100 with the remainders NeMo's distributed Adam keeps.
  const auto preset = config::load_job_preset("nemotron4-340b");
  CHECK(preset.parallel.tp * preset.parallel.pp * preset.parallel.dp == 6144);
  CHECK(preset.model.mlp == schedules::MlpKind::SquaredRelu);
  CHECK(preset.options.master_weights == schedules::MasterWeights::Bf16Remainder);
  const auto nemo_table = [](const char* master) {
    config::JobEdits e;
    for (const char* kv :
         {"gpus=128", "parallel.pp=8", "parallel.vpp=12", "parallel.global_batch=32", "precision.gemm=fp8"})
      e.set.push_back(config::parse_key_override(kv));
    e.set.push_back(config::parse_key_override(std::string("schedule.master_weights=") + master));
    return schedules::estimate_memory(config::load_job_preset("nemotron4-340b", e), 0).total_bytes();
  };
  constexpr double kH100Bytes = 85520809984; // presets/hardware/gpus.toml, H100-SXM memory_bytes
  CHECK(nemo_table("bf16_remainder") < kH100Bytes);
  CHECK(nemo_table("fp32") > kH100Bytes);
  config::JobEdits relu;
  relu.set.push_back(config::parse_key_override("model.mlp=relu"));
  CHECK_THROWS_WITH(config::load_job_preset("nemotron4-340b", relu),
                    Catch::Contains("model.mlp") && Catch::Contains("squared_relu"));
}

TEST_CASE("gpt-175b presets follow megascale.md", "[config]") {
  for (const char* n : {"gpt-175b-megatron", "gpt-175b-megascale"}) {
    const auto job = config::load_job_preset(n);
    CHECK(job.model.layers == 96);
    CHECK(job.model.hidden == 12288);
    CHECK(job.model.heads == 128);
    CHECK(job.model.ffn_hidden == 4 * 12288);
    CHECK(job.parallel.gpus() == 12288);
    CHECK(job.parallel.dp == 192);
    CHECK(job.parallel.micro_batches() == 32);
    CHECK(job.model.attention == schedules::AttentionKind::Dense);
  }
  const auto a = config::load_job_preset("gpt-175b-megatron");
  const auto b = config::load_job_preset("gpt-175b-megascale");
  CHECK(a.model.block == schedules::BlockKind::Serial);
  CHECK(b.model.block == schedules::BlockKind::Parallel);
  CHECK(a.parallel.zero_stage == 1);
  CHECK(b.parallel.zero_stage == 2);
  CHECK(b.options.overlap.tp_chunks >= 2);
}

TEST_CASE("a minimal job takes the documented defaults", "[config]") {
  const auto job = config::parse_job(kTiny, "job.toml");
  CHECK(job.parallel.vpp == 1);
  CHECK(job.parallel.zero_stage == 0);
  CHECK(job.options.pipeline == schedules::PipelineKind::OneFOneB);
  CHECK(job.options.optimizer == schedules::OptimizerKind::Adam);
  CHECK(job.options.overlap.tp_chunks == 1);
  CHECK(job.model.ffn_hidden == 1024);
}

TEST_CASE("dp may be derived from gpus", "[config]") {
  auto text = replace(kTiny, "dp = 2\n", "");
  text = replace(text, "[model]", "gpus = 16\n[model]");
  const auto job = config::parse_job(text, "job.toml");
  CHECK(job.parallel.dp == 4);
  expect_error<config::ConfigError>(replace(text, "gpus = 16", "gpus = 10"), "gpus", "tp·pp");
  expect_error<config::ConfigError>(replace(kTiny, "dp = 2\n", ""), "parallel.dp", "gpus");
}

TEST_CASE("unknown keys are rejected with the valid ones", "[config][bad-input]") {
  expect_error<config::ConfigError>(replace(kTiny, "tp = 2", "tp = 2\ntpp = 3"), "parallel.tpp", "valid keys here");
  expect_error<config::ConfigError>(replace(kTiny, "name = \"t\"", "name = \"t\"\nfoo = 1"), "'foo'", "valid keys");
}

TEST_CASE("wrong types are rejected naming the key", "[config][bad-input]") {
  expect_error<config::ConfigError>(replace(kTiny, "tp = 2", "tp = \"2\""), "parallel.tp", "integer");
  expect_error<config::ConfigError>(replace(kTiny, "dp = 2", "dp = 2\nsequence_parallel = 1"),
                                    "parallel.sequence_parallel", "true or false");
  expect_error<config::ConfigError>(replace(kTiny, "vocab = 1024", "vocab = 1024\nblock = \"x\""), "model.block",
                                    "serial, parallel");
  expect_error<config::ConfigError>(replace(kTiny, "dp = 2", "dp = 2\nzero_stage = 4"), "parallel.zero_stage",
                                    "[0, 3]");
}

TEST_CASE("impossible parallelism is a JobError naming the constraint", "[config][bad-input]") {
  expect_error<schedules::JobError>(replace(kTiny, "layers = 4", "layers = 5"), "model.layers", "pp·vpp");
  expect_error<schedules::JobError>(replace(kTiny, "heads = 8", "heads = 3"), "model.hidden", "model.heads");
  expect_error<schedules::JobError>(replace(kTiny, "tp = 2", "tp = 16"), "model.heads", "parallel.tp");
  expect_error<schedules::JobError>(replace(kTiny, "global_batch = 8", "global_batch = 9"), "global_batch",
                                    "dp·micro_batch");
  expect_error<schedules::JobError>(replace(kTiny, "dp = 2", "dp = 2\nvpp = 2"), "vpp", "interleaved");
  expect_error<schedules::JobError>(
      replace(kTiny, "global_batch = 8", "global_batch = 6\nvpp = 2\n[schedule]\npipeline = \"interleaved\""),
      "micro-batches % pp", "3");
  expect_error<schedules::JobError>(replace(kTiny, "vocab = 1024", "vocab = 1024\nattention = \"sliding\""), "window",
                                    "0 <");
}

TEST_CASE("tp·pp·dp ≠ gpus is rejected", "[config][bad-input]") {
  const auto text = replace(kTiny, "[model]", "gpus = 12\n[model]");
  expect_error<config::ConfigError>(text, "gpus", "tp·pp·dp");
}

TEST_CASE("apply_overrides re-derives dp and re-checks", "[config]") {
  auto job = config::load_job_preset("gpt-175b-megascale");
  config::apply_overrides(job, 3072, std::nullopt);
  CHECK(job.parallel.dp == 48);
  CHECK(job.parallel.micro_batches() == 128);
  config::apply_overrides(job, 256, 768);
  CHECK(job.parallel.dp == 4);
  CHECK_THROWS_AS(config::apply_overrides(job, 100, std::nullopt), config::ConfigError);
  CHECK_THROWS_AS(config::apply_overrides(job, 512, 100), schedules::JobError);
}

TEST_CASE("missing files and syntax errors name the file", "[config][bad-input]") {
  CHECK_THROWS_WITH(config::load_job("/nonexistent/job.toml"), Catch::Contains("/nonexistent/job.toml"));
  CHECK_THROWS_WITH(config::parse_job("name = ", "bad.toml"), Catch::Contains("bad.toml"));
  CHECK_THROWS_WITH(config::load_job_preset("nope"), Catch::Contains("tiny-1f1b"));
}

TEST_CASE("validation-set options: scatter/gather and fp32 gradient reduction", "[config]") {
  const auto job = config::parse_job(replace(kTiny, "pp = 2", "pp = 2\npp_scatter_gather = true") +
                                         "\n[schedule]\ngrad_reduce_dtype = \"fp32\"\n",
                                     "job.toml");
  CHECK(job.parallel.pp_scatter_gather);
  CHECK(job.options.grad_reduce_fp32);
  expect_error<config::ConfigError>(replace(kTiny, "pp = 2", "pp = 2") + "\n[schedule]\ngrad_reduce_dtype = \"fp16\"\n",
                                    "schedule.grad_reduce_dtype", "bf16, fp32");
}

TEST_CASE("SC'21 software options and selective recomputation", "[config]") {
  const auto defaults = config::parse_job(kTiny, "job.toml");
  CHECK(defaults.options.grad_accumulation_fusion);
  CHECK(defaults.options.tp_async_allreduce);
  CHECK_FALSE(defaults.options.selective_recompute);
  const auto job = config::parse_job(std::string(kTiny) + "\n[schedule]\ngrad_accumulation_fusion = false\n"
                                                          "tp_async_allreduce = false\nrecompute = \"selective\"\n",
                                     "job.toml");
  CHECK_FALSE(job.options.grad_accumulation_fusion);
  CHECK_FALSE(job.options.tp_async_allreduce);
  CHECK(job.options.selective_recompute);
  CHECK_FALSE(job.options.recompute);
  const auto full = config::parse_job(std::string(kTiny) + "\n[schedule]\nrecompute = \"full\"\n", "job.toml");
  CHECK(full.options.recompute);
  CHECK_FALSE(full.options.selective_recompute);
  const auto on = config::parse_job(std::string(kTiny) + "\n[schedule]\nrecompute = true\n", "job.toml");
  CHECK(on.options.recompute);
  CHECK_FALSE(on.options.recompute_saves_alternate_matmuls); // true means "full", whatever the names' order
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\nrecompute = \"some\"\n", "schedule.recompute",
                                    "none, selective, selective-op, full");
  // torchtitan's per-op policy: full recomputation that keeps the attention output and every
  // other matmul's; one layer in every n is not its form, and TP is not modelled for it
  const std::string tp1 = replace(replace(kTiny, "tp = 2", "tp = 1"), "dp = 2", "dp = 4");
  const auto op = config::parse_job(tp1 + "\n[schedule]\nrecompute = \"selective-op\"\n", "job.toml");
  CHECK(op.options.recompute);
  CHECK(op.options.recompute_saves_alternate_matmuls);
  CHECK_FALSE(op.options.selective_recompute);
  expect_error<config::ConfigError>(tp1 + "\n[schedule]\nrecompute = \"selective-op\"\nrecompute_every = 2\n",
                                    "schedule.recompute_every", "full");
  expect_error<twinscale::Error>(std::string(kTiny) + "\n[schedule]\nrecompute = \"selective-op\"\n", "selective-op",
                                 "tp = 1");
}

TEST_CASE("model keys: kv_heads, mlp, untied_embeddings", "[config]") {
  const auto job = config::parse_job(
      replace(kTiny, "vocab = 1024", "vocab = 1024\nkv_heads = 2\nmlp = \"swiglu\"\nuntied_embeddings = true"),
      "job.toml");
  CHECK(job.model.kv() == 2);
  CHECK(job.model.mlp == schedules::MlpKind::SwiGlu);
  CHECK(job.model.untied_embeddings);
  expect_error<config::ConfigError>(replace(kTiny, "vocab = 1024", "vocab = 1024\nmlp = \"relu\""), "model.mlp",
                                    "gelu, swiglu");
}

TEST_CASE("software stacks: presets parse, a job starts from its stack and overrides it", "[config][software]") {
  const auto stacks = config::preset_names("software");
  for (const char* name : {"megatron-lm-2021", "megatron-lm-2022", "megatron-lm-2023", "megatron-core-0.8",
                           "torchtitan-2024", "megascale"}) {
    INFO(name);
    CHECK(std::find(stacks.begin(), stacks.end(), name) != stacks.end());
    const auto job = config::parse_job(
        replace(kTiny, "cluster =", "software = \"" + std::string(name) + "\"\ncluster ="), "job.toml");
    CHECK(job.software == name);
  }
  const auto sc21 =
      config::parse_job(replace(kTiny, "cluster =", "software = \"megatron-lm-2021\"\ncluster ="), "job.toml");
  CHECK_FALSE(sc21.options.grad_accumulation_fusion);
  CHECK_FALSE(sc21.options.tp_async_allreduce);
  CHECK(sc21.options.operators.fused_layernorm);
  CHECK_FALSE(sc21.options.operators.flash_attention);
  const auto mcore = config::parse_job(
      replace(kTiny, "cluster =", "software = \"megatron-core-0.8\"\ncluster =") +
          "\n[schedule]\ngrad_reduce_dtype = \"bf16\"\n[schedule.overlap]\ntp = true\ntp_chunks = 2\n",
      "job.toml");
  CHECK(mcore.options.dp_bucket_params == 1); // the stack's one bucket per layer
  CHECK(mcore.options.overlap.dp);
  CHECK_FALSE(mcore.options.grad_reduce_fp32); // the job's key over the stack's fp32
  CHECK(mcore.options.overlap.tp);
  CHECK(mcore.options.overlap.tp_chunks == 2);
  CHECK(mcore.options.operators.flash_attention);
  // without a stack: the built-in defaults
  CHECK(config::parse_job(kTiny, "job.toml").options.dp_bucket_params == 0);
  expect_error<config::ConfigError>(replace(kTiny, "cluster =", "software = \"megatron-9\"\ncluster ="), "software",
                                    "megatron-lm-2021");
}

TEST_CASE("software files: only stack facts, errors name the stack file", "[config][software]") {
  namespace fs = std::filesystem;
  const fs::path dir = twinscale::test::scratch_dir("software-test");
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  write("stack.toml", "name = \"mine\"\n[schedule]\ndp_bucket_params = 5000000\n[schedule.overlap]\ndp = true\n");
  const auto job =
      config::load_job(write("job.toml", replace(kTiny, "cluster =", "software = \"stack.toml\"\ncluster =")));
  CHECK(job.options.dp_bucket_params == 5000000);
  CHECK(job.options.overlap.dp);
  // a job choice is not a stack fact: refused, naming the stack file and the key
  write("bad.toml", "name = \"bad\"\n[schedule]\npipeline = \"1f1b\"\n");
  try {
    config::load_job(write("job2.toml", replace(kTiny, "cluster =", "software = \"bad.toml\"\ncluster =")));
    FAIL("a software file with a job key was accepted");
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("bad.toml") != std::string::npos);
    CHECK(msg.find("pipeline") != std::string::npos);
  }
  // a bad value in a stack names the stack file and its key
  write("typo.toml", "name = \"typo\"\n[schedule]\ndp_bucket_params = -1\n");
  try {
    config::load_job(write("job3.toml", replace(kTiny, "cluster =", "software = \"typo.toml\"\ncluster =")));
    FAIL("a negative bucket in a software file was accepted");
  } catch (const config::ConfigError& e) {
    const std::string msg = e.what();
    INFO(msg);
    CHECK(msg.find("typo.toml") != std::string::npos);
    CHECK(msg.find("schedule.dp_bucket_params") != std::string::npos);
  }
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\ndp_bucket_params = -1\n",
                                    "schedule.dp_bucket_params", "job.toml");
  // a stack outside the job's folder is refused
  expect_error<config::ConfigError>(replace(kTiny, "cluster =", "software = \"/etc/passwd\"\ncluster ="), "software",
                                    "valid");
  fs::remove_all(dir);
}

TEST_CASE("recompute_every needs full recomputation", "[config]") {
  const auto job =
      config::parse_job(std::string(kTiny) + "\n[schedule]\nrecompute = \"full\"\nrecompute_every = 2\n", "job.toml");
  CHECK(job.options.recompute_every == 2);
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\nrecompute_every = 2\n",
                                    "schedule.recompute_every", "full");
}

TEST_CASE("stack and model facts: out-of-range or mistyped values name the key and what is valid",
          "[config][software]") {
  expect_error<config::ConfigError>(replace(kTiny, "vocab = 1024", "vocab = 1024\ndropout = 1.5"), "model.dropout",
                                    "[0, 0.999]");
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\nhost_seconds_per_fp8_module = -1\n",
                                    "schedule.host_seconds_per_fp8_module", "[0, 0.01]");
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\nhost_seconds_per_module = 1\n",
                                    "schedule.host_seconds_per_module", "[0, 0.01]");
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule]\nfsdp_copy_out = \"yes\"\n",
                                    "schedule.fsdp_copy_out", "true or false");
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule.operators]\nfused_rope = 3\n",
                                    "schedule.operators.fused_rope", "true or false");
  expect_error<config::ConfigError>(std::string(kTiny) + "\n[schedule.operators]\nfused_qkv = 0\n",
                                    "schedule.operators.fused_qkv", "true or false");
}
