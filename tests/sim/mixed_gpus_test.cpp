// Mixed GPU models in one cluster ([[gpu_groups]] of a cluster file): each rank
// computes on its own server's GPU model, exactly. With the communication slowdown of
// compute off, a rank's forward and backward compute seconds do not depend on when its
// ops run, so every rank of a mixed cluster must show the compute seconds it shows in a
// cluster made only of its own model. Bad groups are refused naming the key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "sim/error.hpp"
#include "sim_test_util.hpp"
#include "tests/scratch.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;

namespace {

/// tiny-2tier (4 servers of A100-SXM-80GB) with `groups` appended, written to a file.
std::string cluster_file(const std::string& name, const std::string& groups) {
  const auto dir = twinscale::test::scratch_dir("mixed-gpus");
  const auto path = dir / (name + ".toml");
  std::ifstream in(std::string(TWINSCALE_SOURCE_DIR) + "/presets/clusters/tiny-2tier.toml");
  std::ofstream out(path);
  out << in.rdbuf() << "\n" << groups;
  return path.string();
}

struct Run {
  SimReport report;
  int64_t world = 0;
};

Run run(const topology::ClusterSpec& spec, SimMode mode) {
  auto job = config::load_job_preset("tiny-megascale");
  job.options.iterations = 1;
  config::apply_overrides(job, 32, 64);
  topology::Fabric fabric(spec);
  schedules::LoweringTarget target;
  target.gpu_memory_bytes = spec.gpu.memory_bytes;
  const auto schedule = schedules::lower(job, target);
  const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                    topology::PlacementPolicy::Linear, 1);
  SimOptions o;
  o.mode = mode;
  o.device.nccl_compute_slowdown = 0; // compute seconds independent of the timeline
  return {simulate(schedule, fabric, gpus, o), schedule.layout.world()};
}

} // namespace

TEST_CASE("a cluster file's gpu_groups give servers another GPU model", "[sim][mixed_gpus]") {
  const auto spec = config::load_cluster(cluster_file("two", "[[gpu_groups]]\nservers = \"2-3\"\n"
                                                             "model = \"A100-SXM-40GB\"\n"
                                                             "[[gpu_groups]]\nservers = \"1\"\n"
                                                             "model = \"H100-SXM\"\nhbm_efficiency = 0.8\n"));
  REQUIRE(spec.gpu_groups.size() == 2);
  CHECK(spec.gpu_groups[0].first_server == 2);
  CHECK(spec.gpu_groups[0].last_server == 3);
  CHECK(spec.gpu_groups[0].gpu.model == "A100-SXM-40GB");
  CHECK(spec.gpu_groups[1].first_server == 1);
  CHECK(spec.gpu_groups[1].last_server == 1);
  CHECK(spec.gpu_groups[1].gpu.kernels.hbm_efficiency == 0.8);
  CHECK(topology::gpu_model_of_server(spec, 0) == 0);
  CHECK(topology::gpu_model_of_server(spec, 1) == 2);
  CHECK(topology::gpu_model_of_server(spec, 3) == 1);
}

TEST_CASE("mixed GPU models: every rank computes exactly at its own GPU's speed", "[sim][mixed_gpus]") {
  const auto base = config::load_cluster("tiny-2tier");
  const auto mixed =
      config::load_cluster(cluster_file("mixed", "[[gpu_groups]]\nservers = \"2-3\"\nmodel = \"A100-SXM-40GB\"\n"));
  const auto slow =
      config::load_cluster(cluster_file("slow", "[[gpu_groups]]\nservers = \"0-3\"\nmodel = \"A100-SXM-40GB\"\n"));
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    const Run fast_run = run(base, mode), slow_run = run(slow, mode), mixed_run = run(mixed, mode);
    const SimReport &f = fast_run.report, &s = slow_run.report, &m = mixed_run.report;
    CHECK(f.aggregated);
    CHECK(!m.aggregated); // mixed models: every rank is executed
    // every replica has stage 0 on the first two servers and stage 1 on the A100s: the
    // analytic mode executes one of them for all (to the bit: replica_classes_test.cpp)
    CHECK(m.executed_ranks == (mode == SimMode::Analytic ? 4 : mixed_run.world));
    REQUIRE(m.per_rank.size() == f.per_rank.size());
    int64_t on_slow = 0;
    for (size_t r = 0; r < m.per_rank.size(); ++r) {
      // Linear placement: rank r on GPU r, server r / 8; servers 2-3 hold the 40 GB model
      const bool slow_gpu = r / 8 >= 2;
      on_slow += slow_gpu ? 1 : 0;
      const auto& want = slow_gpu ? s.per_rank[r] : f.per_rank[r];
      INFO("rank " << r);
      CHECK(m.per_rank[r].forward_s == Approx(want.forward_s).epsilon(1e-9));
      CHECK(m.per_rank[r].backward_s == Approx(want.backward_s).epsilon(1e-9));
    }
    CHECK(on_slow == 16);
    // the 40 GB model has less HBM bandwidth: slower kernels, a longer iteration
    CHECK(s.per_rank[0].forward_s > f.per_rank[0].forward_s);
    CHECK(m.iteration_time_s > f.iteration_time_s);
    // at most the all-slow iteration (in the flow mode within 0.1 %: the fast servers'
    // earlier sends meet the slow ones' flows at other times; measured 0.007 %)
    CHECK(m.iteration_time_s <= s.iteration_time_s * (mode == SimMode::Flow ? 1.001 : 1 + 1e-9));
  }
}

TEST_CASE("bad gpu_groups are refused naming the key", "[sim][mixed_gpus]") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(
      config::load_cluster(cluster_file("overlap", "[[gpu_groups]]\nservers = \"0-1\"\nmodel = \"H100-SXM\"\n"
                                                   "[[gpu_groups]]\nservers = \"1-2\"\nmodel = \"H100-SXM\"\n")),
      Contains("gpu_groups") && Contains("overlaps"));
  CHECK_THROWS_WITH(
      config::load_cluster(cluster_file("backwards", "[[gpu_groups]]\nservers = \"3-1\"\nmodel = \"H100-SXM\"\n")),
      Contains("servers") && Contains("ends before it starts"));
  CHECK_THROWS_WITH(
      config::load_cluster(cluster_file("words", "[[gpu_groups]]\nservers = \"all\"\nmodel = \"H100-SXM\"\n")),
      Contains("servers") && Contains("inclusive range"));
  CHECK_THROWS_WITH(
      config::load_cluster(cluster_file("nomodel", "[[gpu_groups]]\nservers = \"1\"\nmodel = \"V100\"\n")),
      Contains("model") && Contains("A100-SXM-80GB"));
  CHECK_THROWS_AS(config::load_cluster(cluster_file("custom", "[[gpu_groups]]\nservers = \"1\"\nmodel = \"custom\"\n")),
                  config::ConfigError);
  const auto past =
      config::load_cluster(cluster_file("past", "[[gpu_groups]]\nservers = \"3-9\"\nmodel = \"H100-SXM\"\n"));
  CHECK_THROWS_WITH(run(past, SimMode::Analytic), Contains("gpu_groups[0]") && Contains("servers 0-3"));
}

namespace {

/// One TP all-reduce of 64 MB inside server 0 (ranks 0-7, GPUs 0-7) and inside server 2
/// (ranks 8-15, GPUs 16-23): NVLink traffic only.
SimReport tp_all_reduce(const topology::ClusterSpec& spec, SimMode mode) {
  using namespace twinscale::sim::test;
  topology::Fabric fabric(spec);
  ProgramBuilder b;
  b.add(collective(OpKind::AllReduce, GroupKind::Tp, 64e6, Stream::TpComm));
  const auto schedule = make_schedule({8, 2, 1}, {b.take()}, std::vector<uint32_t>(16, 0));
  std::vector<int64_t> gpus;
  for (int64_t g = 0; g < 8; ++g) gpus.push_back(g);
  for (int64_t g = 16; g < 24; ++g) gpus.push_back(g);
  return simulate(schedule, fabric, gpus, exact_options(mode));
}

} // namespace

TEST_CASE("mixed GPU models: each server's NVLink has its own model's bandwidth", "[sim][mixed_gpus]") {
  const auto a100 = config::load_cluster("tiny-2tier");
  // tiny-2tier with H100s for [gpu]: NVLink4's bandwidth and efficiency everywhere
  const auto h100_path = twinscale::test::scratch_dir("mixed-gpus-h100") / "all-h100.toml";
  {
    std::ifstream in(std::string(TWINSCALE_SOURCE_DIR) + "/presets/clusters/tiny-2tier.toml");
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    text.replace(text.find("A100-SXM-80GB"), 13, "H100-SXM");
    std::ofstream(h100_path) << text;
  }
  const auto h100 = config::load_cluster(h100_path.string());
  REQUIRE(h100.gpu.nvlink.efficiency != a100.gpu.nvlink.efficiency);
  const auto mixed =
      config::load_cluster(cluster_file("mixed-h100", "[[gpu_groups]]\nservers = \"2-3\"\nmodel = \"H100-SXM\"\n"));
  REQUIRE(mixed.gpu_groups[0].gpu.nvlink_bw_bytes_per_s > a100.gpu.nvlink_bw_bytes_per_s);
  const topology::Fabric fabric(mixed);
  for (const auto& l : fabric.links()) {
    if (l.kind != topology::LinkKind::NvLink) continue;
    const int64_t gpu = fabric.vertices()[l.a].index; // `a`: the GPU end
    const bool group = fabric.server_of_gpu(gpu) >= 2;
    CHECK(l.bw_bytes_per_s == (group ? mixed.gpu_groups[0].gpu.nvlink_bw_bytes_per_s : a100.gpu.nvlink_bw_bytes_per_s));
  }
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO("mode " << to_string(mode));
    const auto slow = tp_all_reduce(a100, mode), fast = tp_all_reduce(h100, mode), m = tp_all_reduce(mixed, mode);
    REQUIRE(m.per_rank.size() == 16);
    CHECK(fast.per_rank[8].comm_wait_s < slow.per_rank[8].comm_wait_s);
    for (size_t r = 0; r < 16; ++r) {
      INFO("rank " << r);
      const auto& want = r < 8 ? slow.per_rank[r] : fast.per_rank[r]; // ranks 8-15 sit on server 2
      CHECK(m.per_rank[r].comm_wait_s == Approx(want.comm_wait_s).epsilon(1e-9));
    }
  }
}

TEST_CASE("mixed GPU models: the memory check uses the tightest model and names it", "[sim][mixed_gpus]") {
  using Catch::Matchers::Contains;
  const auto base = config::load_cluster("tiny-2tier");
  const auto plain = config::tightest_gpu_memory(base);
  CHECK(plain.bytes == base.gpu.memory_bytes);
  CHECK_THAT(plain.holder, Contains("[gpu]") && Contains("A100-SXM-80GB"));
  const auto mixed = config::load_cluster(cluster_file("mixed-mem", "[[gpu_groups]]\nservers = \"1\"\n"
                                                                    "model = \"H100-SXM\"\n"
                                                                    "[[gpu_groups]]\nservers = \"2-3\"\n"
                                                                    "model = \"A100-SXM-40GB\"\n"));
  const auto limit = config::tightest_gpu_memory(mixed);
  CHECK(limit.bytes == mixed.gpu_groups[1].gpu.memory_bytes);
  CHECK(limit.bytes < base.gpu.memory_bytes);
  CHECK_THAT(limit.holder, Contains("gpu_groups[1]") && Contains("A100-SXM-40GB") && Contains("servers 2-3"));
  // a job that does not fit names that group
  auto job = config::load_job_preset("tiny-megascale");
  schedules::LoweringTarget target;
  target.gpu_memory_bytes = 1e6; // far too small for any stage
  target.gpu_memory_holder = limit.holder;
  CHECK_THROWS_WITH(schedules::lower(job, target),
                    Contains("the tightest GPU, gpu_groups[1] (A100-SXM-40GB, servers 2-3)") && Contains("0.0 GB"));
}
