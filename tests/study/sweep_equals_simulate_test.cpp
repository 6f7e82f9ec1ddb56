// A sweep point runs the setup `twinscale simulate` runs (config::Scenario): on a cluster
// with a [network] table (DCQCN congestion control) and on one with [[gpu_groups]] (a
// smaller GPU memory on some servers), every figure a sweep stores, analytic and flow,
// equals the one `twinscale simulate --json` prints for the same job; a point whose
// job does not fit the tightest GPU memory is refused by both. A study over axes of the key
// tables ("job.schedule.pipeline" zb-h1, ZeRO-3, cp, ep, "cluster.server.nics" and a key no
// short axis names) stores, for every point, what `simulate --set KEY=VALUE` prints for
// the same job and cluster (iteration, breakdown, layout) and the memory estimate of the
// job that command reads; a point the study finds infeasible, simulate refuses too.
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "config/scenario.hpp"
#include "schedules/memory.hpp"
#include "study/axes.hpp"
#include "study/store.hpp"
#include "tests/backend/mpi_helpers.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace bt = twinscale::backend::test;

namespace {

// tiny-2tier (presets/clusters/tiny-2tier.toml) plus `extra`.
std::string write_cluster(const std::string& dir, const std::string& name, const std::string& extra) {
  const std::string path = dir + "/" + name + ".toml";
  test::write_text(path, "name = \"" + name + R"("
gpus = 32
[gpu]
model = "A100-SXM-80GB"
[server]
gpus = 8
nics = 8
nic = "ConnectX-6"
rails = 2
[switch]
model = "custom"
radix = 8
port_gbit_per_s = 400
latency_ns = 600
[fabric]
tiers = 2
oversubscription = [1]
split_downlinks = true
servers_per_tor = 2
)" + extra);
  return path;
}

nlohmann::json simulate_json(const std::string& cluster, const std::string& mode) {
  const auto r = test::run_cli("simulate --preset tiny-megascale --gpus 32 --global-batch 16 --cluster " + cluster +
                                   " --mode " + mode + " --json",
                               test::Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  return nlohmann::json::parse(r.out);
}

/// The figures a flow re-simulation stores (the store keeps these of it), compared exactly.
void check_same_flow(const study::PointResult& flow, const nlohmann::json& sim) {
  CHECK(flow.status == study::PointStatus::Ok);
  CHECK(sim.at("mode").get<std::string>() == "flow");
  CHECK(flow.iteration_time_s == sim.at("iteration_time_s").get<double>());
  CHECK(flow.tokens_per_s == sim.at("tokens_per_s").get<double>());
  CHECK(flow.mfu == sim.at("mfu").get<double>());
  CHECK(flow.exposed_dp_s == sim.at("breakdown").at("exposed_dp_s").get<double>());
}

/// Every figure a sweep stores of a point that `simulate --json` prints, compared exactly.
void check_same(const study::PointResult& point, const nlohmann::json& sim) {
  CHECK(point.status == study::PointStatus::Ok);
  CHECK(point.mode == sim.at("mode").get<std::string>());
  CHECK(point.gpus == sim.at("gpus").get<int64_t>());
  CHECK(point.iteration_time_s == sim.at("iteration_time_s").get<double>());
  CHECK(point.tokens_per_s == sim.at("tokens_per_s").get<double>());
  CHECK(point.tflops_per_gpu == sim.at("tflops_per_gpu").get<double>());
  CHECK(point.mfu == sim.at("mfu").get<double>());
  const auto& b = sim.at("breakdown");
  CHECK(point.compute_s == b.at("compute_s").get<double>());
  CHECK(point.exposed_tp_s == b.at("exposed_tp_s").get<double>());
  CHECK(point.exposed_pp_s == b.at("exposed_pp_s").get<double>());
  CHECK(point.exposed_dp_s == b.at("exposed_dp_s").get<double>());
  CHECK(point.bubble_s == b.at("bubble_s").get<double>());
}

/// The `simulate` arguments of a point of the key-table study: the job preset, then one
/// `--set` per axis, named through the axis' table key (the alias tp is parallel.tp).
std::string simulate_args(const nlohmann::json& inputs, std::vector<config::KeyOverride>& job_edits) {
  std::string args = "simulate --preset " + inputs.at("job").get<std::string>() + " --gpus 32 --global-batch 16";
  for (const auto& [axis, value] : inputs.items()) {
    const study::AxisDef& d = study::axis_def(axis);
    if (axis == "job") continue;
    REQUIRE((d.job_key || d.cluster_key));
    const std::string v = value.is_string() ? value.get<std::string>() : value.dump();
    if (d.job_key) job_edits.push_back(config::parse_key_override(d.job_key->key + "=" + v));
    args += " --set " + (d.job_key ? d.job_key->key : "cluster." + d.cluster_key->key) + "=" + v;
  }
  return args + " --mode analytic --json";
}

/// Runs the study `text` (base: tiny jobs on tiny-2tier, 32 GPUs, global batch 16) and
/// checks every point against `simulate --set`; returns each axis' values of feasible points.
std::map<std::string, std::set<std::string>> check_study(const std::string& dir, const std::string& text) {
  const std::string study = dir + "/keys.toml", db = dir + "/k.db";
  std::filesystem::remove(db);
  test::write_text(study, "name = \"key-axes\"\n[base]\njob = \"tiny-1f1b\"\ngpus = 32\nglobal_batch = 16\n" + text);
  const auto run =
      test::run_cli("sweep " + study + " --db " + db + " --progress never", test::Capture::StdoutAndStderr);
  INFO(run.out);
  REQUIRE(run.rc == 0);
  std::map<std::string, std::set<std::string>> ok_values;
  for (const auto& row : study::Store(db).rows()) {
    auto inputs = nlohmann::json::parse(row.inputs);
    if (!inputs.contains("job")) inputs["job"] = "tiny-1f1b";
    std::vector<config::KeyOverride> job_edits;
    const std::string args = simulate_args(inputs, job_edits);
    INFO(args << "\n" << row.result.reason);
    if (row.result.status != study::PointStatus::Ok) { // refused by both
      CHECK(row.result.status == study::PointStatus::Infeasible);
      CHECK(test::run_cli(args, test::Capture::StdoutAndStderr).rc != 0);
      continue;
    }
    const auto r = test::run_cli(args, test::Capture::StdoutOnly);
    REQUIRE(r.rc == 0);
    const auto sim = nlohmann::json::parse(r.out);
    check_same(row.result, sim);
    CHECK(row.result.exposed_ep_s == sim.at("breakdown").at("exposed_ep_s").get<double>());
    const auto& layout = sim.at("layout");
    for (const auto& [name, v] : {std::pair{"tp", row.result.tp},
                                  {"cp", row.result.cp},
                                  {"ep", row.result.ep},
                                  {"dp", row.result.dp},
                                  {"pp", row.result.pp}})
      CHECK(layout.at(name).get<int64_t>() == v);
    // memory: the estimate of the job simulate read (the same edits), largest stage
    config::JobEdits edits;
    edits.set = job_edits;
    edits.gpus = 32;
    edits.global_batch = 16;
    const auto job = config::load_job_preset(inputs.at("job").get<std::string>(), edits);
    double memory = 0;
    for (int64_t stage = 0; stage < job.parallel.pp; ++stage)
      memory = std::max(memory, schedules::estimate_memory(job, stage).total_bytes());
    CHECK(row.result.memory_bytes == memory);
    for (const auto& [axis, value] : inputs.items()) ok_values[axis].insert(value.dump());
  }
  return ok_values;
}

} // namespace

TEST_CASE("sweep: a point over job and cluster keys stores what simulate --set prints", "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-equals-simulate-keys");
  // a Latin hypercube: each value of each axis in 8 of the 16 rows; a short axis' long
  // spelling is stored under the short name, any other key as written
  auto ok = check_study(dir, R"([sample]
method = "lhs"
points = 16
seed = 3
[axes]
job = ["tiny-1f1b", "tiny-moe"]
"job.schedule.pipeline" = ["1f1b", "zb-h1"]
"job.parallel.zero_stage" = [1, 3]
"job.parallel.cp" = [1, 2]
"job.parallel.ep" = [1, 2]
"cluster.server.nics" = [8, 4]
"cluster.switch.latency_ns" = [600, 5000]
)");
  for (const char* axis : {"job", "pipeline", "zero_stage", "cp", "ep", "nics", "cluster.switch.latency_ns"})
    CHECK(ok[axis].size() == 2);
  // catalogue models, made to the cluster document (the model's figures come with them);
  // the ConnectX-7's 400 Gb/s port cannot be split: infeasible in both
  ok = check_study(dir, "[axes]\n\"cluster.gpu.model\" = [\"A100-SXM-80GB\", \"H100-SXM\"]\n"
                        "\"cluster.server.nic\" = [\"ConnectX-6\", \"ConnectX-7\"]\n");
  CHECK(ok["cluster.gpu.model"].size() == 2);
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep: a point stores what simulate prints on clusters with congestion control and GPU groups",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-equals-simulate");
  const std::string dcqcn = write_cluster(dir, "dcqcn", "[network]\ncongestion_control = \"dcqcn\"\n");
  const std::string groups =
      write_cluster(dir, "groups", "[[gpu_groups]]\nservers = \"2-3\"\nmodel = \"A100-SXM-40GB\"\n");
  const std::string tiny_memory = write_cluster(
      dir, "tiny-memory", "[[gpu_groups]]\nservers = \"3\"\nmodel = \"A100-SXM-40GB\"\nmemory_bytes = 1e6\n");
  const std::string study = dir + "/study.toml";
  test::write_text(study, "name = \"same-setup\"\n[base]\njob = \"tiny-megascale\"\ngpus = 32\nglobal_batch = 16\n"
                          "[axes]\ncluster = [\"" +
                              dcqcn + "\", \"" + groups + "\", \"" + tiny_memory + "\"]\n[evaluate]\nflow_best = 2\n");
  const auto run =
      test::run_cli("sweep " + study + " --db " + dir + "/s.db --progress never", test::Capture::StdoutAndStderr);
  INFO(run.out);
  REQUIRE(run.rc == 0);
  const auto rows = study::Store(dir + "/s.db").rows();
  REQUIRE(rows.size() == 3);
  for (const auto& row : rows) {
    const std::string cluster = row.inputs.find("dcqcn") != std::string::npos    ? dcqcn
                                : row.inputs.find("groups") != std::string::npos ? groups
                                                                                 : tiny_memory;
    INFO("cluster " << cluster);
    if (cluster == tiny_memory) {
      // 1 MB on server 3: the tightest GPU memory, so the job fits nowhere (as simulate says)
      CHECK(row.result.status == study::PointStatus::Infeasible);
      CHECK_THAT(row.result.reason, Contains("gpu_groups[0]"));
      CHECK(row.result.gpu_memory_bytes == 1e6);
      const auto sim = test::run_cli("simulate --preset tiny-megascale --gpus 32 --global-batch 16 --cluster " +
                                         tiny_memory + " --mode analytic",
                                     test::Capture::StdoutAndStderr);
      CHECK(sim.rc == 1);
      CHECK_THAT(sim.out, Contains("gpu_groups[0]"));
      continue;
    }
    if (cluster == groups) { // the tightest model's memory, the 40 GB A100 of servers 2-3, not [gpu]'s 80 GB
      const auto limit = config::tightest_gpu_memory(config::load_cluster(groups));
      CHECK_THAT(limit.holder, Contains("gpu_groups[0]"));
      CHECK(row.result.gpu_memory_bytes == limit.bytes);
    }
    check_same(row.result, simulate_json(cluster, "analytic"));
    REQUIRE(row.flow.has_value());
    check_same_flow(*row.flow, simulate_json(cluster, "flow"));
  }
  // The DCQCN cluster's flow figure is the congestion-controlled one: it differs from the
  // same fabric without [network] (what a sweep stored before it shared simulate's setup).
  const std::string plain = write_cluster(dir, "plain", "");
  const auto controlled = simulate_json(dcqcn, "flow").at("iteration_time_s").get<double>();
  CHECK(controlled != simulate_json(plain, "flow").at("iteration_time_s").get<double>());
  std::filesystem::remove_all(dir);
}
