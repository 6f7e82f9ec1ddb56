// The device's hand-off of each ready compute op (op_issue_gap_s: the probed CPU host's
// executor → worker gap): the stream idles that long before every compute op starts,
// while the op's own duration stays the device model's; communication ops have none.
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>

#include "config/cluster_file.hpp"
#include "sim/error.hpp"
#include "sim_test_util.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// One rank: three 1 ms compute ops in a row on the compute stream.
schedules::Schedule chain(double hbm_bw) {
  ProgramBuilder b;
  const uint32_t a = b.add(compute(1e-3, hbm_bw));
  const uint32_t c = b.add(compute(1e-3, hbm_bw), {a});
  b.add(compute(1e-3, hbm_bw), {c});
  std::vector<schedules::Program> programs;
  programs.push_back(b.take());
  return make_schedule({1, 1, 1}, std::move(programs), {0});
}

} // namespace

TEST_CASE("issue gap: every compute op starts op_issue_gap_s after it is ready, its duration unchanged",
          "[sim][device]") {
  const topology::ClusterSpec cluster = tiny_cluster();
  const topology::Fabric fabric(cluster);
  const double bw = cluster.gpu.hbm_bw_bytes_per_s;
  const schedules::Schedule s = chain(bw);
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO((mode == SimMode::Analytic ? "analytic" : "flow"));
    SimOptions o = exact_options(mode);
    o.record_trace = true;
    const SimReport none = simulate(s, fabric, {0}, o);
    CHECK(none.iteration_time_s == Approx(3e-3).epsilon(1e-9));
    o.device.op_issue_gap_s = 2e-4;
    const SimReport r = simulate(s, fabric, {0}, o);
    CHECK(r.iteration_time_s == Approx(3.6e-3).epsilon(1e-9));
    REQUIRE(r.per_rank.size() == 1);
    CHECK(r.per_rank[0].forward_s == Approx(3e-3).epsilon(1e-9)); // the ops' own time, without the gaps
    REQUIRE(r.trace.events.size() == 3);
    for (const auto& e : r.trace.events) {
      INFO("op " << e.op_index);
      CHECK(e.end_s - e.start_s == Approx(1e-3).epsilon(1e-9));
      CHECK(e.start_s == Approx(2e-4 + 1.2e-3 * e.op_index).epsilon(1e-9));
    }
  }
}

TEST_CASE("issue gap: a cluster's GPU reads op_issue_gap_s (optional, 0 by default, bounded)", "[sim][device]") {
  namespace fs = std::filesystem;
  const fs::path dir = twinscale::test::scratch_dir("issue-gap");
  const std::string base = "name = \"gap\"\ngpus = 8\n[server]\ngpus = 8\nnics = 8\nnic = \"ConnectX-6\"\n"
                           "rails = 1\n[switch]\nmodel = \"custom\"\nradix = 8\nport_gbit_per_s = 400\n"
                           "latency_ns = 600\n[fabric]\ntiers = 2\noversubscription = [1]\nservers_per_tor = 1\n"
                           "[gpu]\nmodel = \"A100-SXM-80GB\"\n";
  std::ofstream(dir / "plain.toml") << base;
  std::ofstream(dir / "gap.toml") << base << "op_issue_gap_s = 1.7e-05\n";
  std::ofstream(dir / "bad.toml") << base << "op_issue_gap_s = -1\n";
  CHECK(config::load_cluster((dir / "plain.toml").string()).gpu.kernels.op_issue_gap_s == 0);
  CHECK(config::load_cluster((dir / "gap.toml").string()).gpu.kernels.op_issue_gap_s == Approx(1.7e-5));
  try {
    config::load_cluster((dir / "bad.toml").string());
    FAIL("a negative op_issue_gap_s was accepted");
  } catch (const std::exception& e) {
    CHECK(std::string(e.what()).find("op_issue_gap_s") != std::string::npos);
  }
  fs::remove_all(dir);
}
