// Job files, the newer keys: norm, mixture of experts, routing, parallel.ep; the new
// presets describe their published models.
#include <catch2/catch.hpp>

#include <string>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "schedules/error.hpp"

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
sequence_parallel = true
global_batch = 8
)";

std::string with(const std::string& model_keys, const std::string& parallel_keys = "") {
  std::string text = kTiny;
  text.replace(text.find("vocab = 1024"), 12, "vocab = 1024\n" + model_keys);
  if (!parallel_keys.empty()) text.replace(text.find("dp = 2"), 6, "dp = 2\n" + parallel_keys);
  return text;
}

std::string error_of(const std::string& text) {
  try {
    config::parse_job(text, "job.toml");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}
} // namespace

TEST_CASE("MoE keys parse with their defaults and meanings", "[config][moe]") {
  const auto dense = config::parse_job(kTiny, "job.toml");
  CHECK(dense.model.experts == 0);
  CHECK(dense.model.norm == schedules::NormKind::LayerNorm);
  CHECK(dense.parallel.ep == 1);
  const auto job = config::parse_job(with("norm = \"rmsnorm\"\nexperts = 8\ntop_k = 2\nmoe_ffn_hidden = 128\n"
                                          "capacity_factor = 1.25\nshared_experts = 1\nmoe_every = 2\n"
                                          "first_dense_layers = 1\nrouting = \"zipf\"\nrouting_exponent = 1.2\n"
                                          "routing_seed = 5",
                                          "ep = 2"),
                                     "job.toml");
  CHECK(job.model.norm == schedules::NormKind::RmsNorm);
  CHECK(job.model.experts == 8);
  CHECK(job.model.top_k == 2);
  CHECK(job.model.expert_ffn() == 128);
  CHECK(job.model.capacity_factor == 1.25);
  CHECK(job.model.shared_experts == 1);
  CHECK(job.model.routing == schedules::RoutingKind::Zipf);
  CHECK(job.model.routing_exponent == 1.2);
  CHECK(job.model.routing_seed == 5);
  CHECK(job.parallel.ep == 2);
  // layer 0 dense, then every second layer from layer 1
  CHECK(!job.model.is_moe_layer(0));
  CHECK(job.model.is_moe_layer(1));
  CHECK(!job.model.is_moe_layer(2));
  CHECK(job.model.is_moe_layer(3));
}

TEST_CASE("bad MoE keys are refused naming the file, the key and what is valid", "[config][moe]") {
  auto has = [](const std::string& msg, const char* a, const char* b) {
    INFO(msg);
    CHECK(msg.find("job.toml") != std::string::npos);
    CHECK(msg.find(a) != std::string::npos);
    CHECK(msg.find(b) != std::string::npos);
  };
  has(error_of(with("norm = \"batchnorm\"")), "norm", "layernorm, rmsnorm");
  has(error_of(with("top_k = 2")), "top_k", "experts = 0");
  has(error_of(with("experts = 8\nrouting_alpha = 0.5")), "routing_alpha", "routing = \"dirichlet\"");
  has(error_of(with("experts = 8\nrouting = \"uniform\"")), "routing", "balanced, dirichlet, zipf");
  has(error_of(with("experts = 8", "ep = 4")), "parallel.ep = 4", "must divide parallel.dp = 2");
  has(error_of(with("experts = 6", "ep = 4")), "parallel.ep", "divide");
  has(error_of(with("", "ep = 2")), "parallel.ep = 2", "needs model.experts > 0");
  has(error_of(with("experts = 8\ncapacity_factor = 0.5")), "capacity_factor", "0 (dropless)");
}

TEST_CASE("newer presets carry their published configurations", "[config][moe]") {
  const auto l8 = config::load_job_preset("llama3-8b");
  CHECK(l8.model.layers == 32);
  CHECK(l8.model.hidden == 4096);
  CHECK(l8.model.kv() == 8);
  CHECK(l8.model.ffn_hidden == 14336);
  CHECK(l8.model.vocab == 128256);
  CHECK(l8.model.norm == schedules::NormKind::RmsNorm);
  const auto l70 = config::load_job_preset("llama3-70b");
  CHECK(l70.model.layers == 80);
  CHECK(l70.model.hidden == 8192);
  CHECK(l70.model.heads == 64);
  CHECK(l70.model.ffn_hidden == 28672);
  const auto mx = config::load_job_preset("mixtral-8x7b");
  CHECK(mx.model.experts == 8);
  CHECK(mx.model.top_k == 2);
  CHECK(mx.model.expert_ffn() == 14336);
  CHECK(mx.parallel.ep == 8);
  const auto ds = config::load_job_preset("deepseek-v3-style");
  CHECK(ds.model.experts == 256);
  CHECK(ds.model.top_k == 8);
  CHECK(ds.model.shared_experts == 1);
  CHECK(ds.model.first_dense_layers == 3);
  CHECK(ds.parallel.ep == 64);
  CHECK(ds.parallel.gpus() == 2048);
}
