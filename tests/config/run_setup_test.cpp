// One run setup: every command that simulates on a cluster takes its simulator options from
// the cluster file the way config::Scenario does (config::cluster_sim_options), and reads
// that file once. `collective` on a cluster whose [network] table turns congestion control
// on simulates with it (it used to drop the table and simulate the plain cluster).
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <sys/inotify.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "config/cluster_file.hpp"
#include "config/scenario.hpp"
#include "sim/collective_run.hpp"
#include "tests/cli_runner.hpp"
#include "topology/fabric.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

/// A copy of the dgx-a100-superpod preset in `dir` (name `file`), with `extra` appended.
fs::path cluster_copy(const fs::path& dir, const std::string& file, const std::string& extra) {
  const std::string preset = test::slurp(fs::path(TWINSCALE_SOURCE_DIR) / "presets/clusters/dgx-a100-superpod.toml");
  REQUIRE(preset.find("[network]") == std::string::npos);
  const fs::path path = dir / file;
  test::write_text(path, preset + extra);
  return path;
}

const std::string kDcqcn = "\n[network]\ncongestion_control = \"dcqcn\"\n";

/// `collective ARGS --json` on `cluster`: its one row's time, µs, and the JSON.
nlohmann::json collective(const fs::path& cluster, const std::string& args, const fs::path& scratch) {
  const test::CliOutput r =
      test::run_cli_split("collective --cluster " + cluster.string() + " " + args + " --json", scratch);
  INFO(r.err);
  REQUIRE(r.code == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  REQUIRE(j["rows"].size() == 1);
  return j;
}

/// How many times any process opens `path` while `run` runs (inotify IN_OPEN events; every
/// open is watched together with its close, so no two events in a row are alike and the
/// kernel merges none).
template <class F>
int opens_during(const fs::path& path, F&& run) {
  const int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  REQUIRE(fd >= 0);
  REQUIRE(inotify_add_watch(fd, path.c_str(), IN_OPEN | IN_CLOSE_NOWRITE | IN_CLOSE_WRITE) >= 0);
  run();
  int opens = 0;
  alignas(inotify_event) char buf[8192];
  for (ssize_t n = 0; (n = ::read(fd, buf, sizeof buf)) > 0;) {
    for (ssize_t at = 0; at < n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      REQUIRE((e->mask & IN_Q_OVERFLOW) == 0);
      if (e->mask & IN_OPEN) ++opens;
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
  ::close(fd);
  return opens;
}

} // namespace

TEST_CASE("collective: a cluster's [network] congestion control is simulated, as Scenario sets it up",
          "[config][scenario][cli]") {
  const fs::path dir = test::scratch_dir("run-setup-cc");
  const fs::path plain = cluster_copy(dir, "plain.toml", "");
  const fs::path dcqcn = cluster_copy(dir, "dcqcn.toml", kDcqcn);
  // four servers' all-to-all: every NIC sends to the other servers at once, so flows meet on
  // the spine links and DCQCN charges each its rate-control penalty
  const std::string args = "--op all-to-all --gpus 32 -b 64M -e 64M --mode flow";
  const nlohmann::json with_cc = collective(dcqcn, args, dir);
  const nlohmann::json without = collective(plain, args, dir);
  CHECK(with_cc["congestion_control"] == "dcqcn");
  CHECK(without["congestion_control"] == "none");
  const double t_cc = with_cc["rows"][0]["time_us"].get<double>();
  const double t_plain = without["rows"][0]["time_us"].get<double>();
  CHECK(t_cc > t_plain);

  // the same figure as the simulator gives with the options the Scenario path fills
  const config::ClusterFile file = config::load_cluster_file(dcqcn.string());
  topology::ClusterSpec spec = file.cluster;
  spec.gpus = 32;
  const topology::Fabric fabric(spec);
  sim::SimOptions base;
  base.mode = sim::SimMode::Flow;
  const sim::SimOptions options = config::cluster_sim_options(file, base, 1);
  CHECK(options.network.congestion_control == topology::CongestionControl::Dcqcn);
  const sim::CollectiveRunResult r = sim::run_collective(fabric, schedules::OpKind::AllToAll,
                                                         sim::collective_gpus(32, 8, 8), 64.0 * 1024 * 1024, options);
  CHECK(t_cc == Approx(r.time_s * 1e6).epsilon(1e-12));

  // analytic mode has no congestion control: the table changes nothing there
  const std::string analytic = "--op all-to-all --gpus 32 -b 64M -e 64M --mode analytic";
  CHECK(collective(dcqcn, analytic, dir)["rows"][0]["time_us"] ==
        collective(plain, analytic, dir)["rows"][0]["time_us"]);
}

TEST_CASE("run setup: each command that simulates on a cluster file reads it once, the real-run commands never",
          "[config][scenario][cli]") {
  const fs::path dir = test::scratch_dir("run-setup-once");
  const fs::path cluster = cluster_copy(dir, "cluster.toml", kDcqcn);
  const auto runs_ok = [&](const std::string& args) {
    return [&dir, args] {
      const test::CliOutput r = test::run_cli_split(args, dir);
      INFO(args << "\n" << r.err);
      CHECK(r.code == 0);
    };
  };
  CHECK(opens_during(cluster, runs_ok("collective --cluster " + cluster.string() +
                                      " --gpus 16 -b 1M -e 1M --mode flow --json")) == 1);
  CHECK(opens_during(cluster, runs_ok("simulate --preset tiny-1f1b --cluster " + cluster.string() +
                                      " --gpus 16 --mode analytic --json")) == 1);

  // simulate-jobs: a study of two jobs on the cluster
  const fs::path study = dir / "study.toml";
  test::write_text(study, "cluster = \"" + cluster.string() +
                              "\"\n[[job]]\njob = \"tiny-1f1b\"\ngpus = 8\n[[job]]\njob = \"tiny-1f1b\"\ngpus = 8\n");
  CHECK(opens_during(cluster, runs_ok("simulate-jobs " + study.string() + " --json")) == 1);

  // calibrate lowers its job without the cluster (the run measured the machine it ran on):
  // it gets as far as reading the trace, which a simulation's trace is refused at
  std::string job = test::slurp(fs::path(TWINSCALE_SOURCE_DIR) / "presets/jobs/tiny-1f1b.toml");
  const auto at = job.find("cluster = ");
  REQUIRE(at != std::string::npos);
  job.replace(at, job.find('\n', at) - at, "cluster = \"" + cluster.string() + "\"");
  const fs::path job_file = dir / "job.toml";
  test::write_text(job_file, job);
  const fs::path trace = dir / "sim-trace.json";
  REQUIRE(
      test::run_cli_split("simulate " + job_file.string() + " --mode analytic --trace " + trace.string(), dir).code ==
      0);
  const int opens = opens_during(cluster, [&] {
    const test::CliOutput r = test::run_cli_split(
        "calibrate " + trace.string() + " " + job_file.string() + " --out " + (dir / "cal.json").string(), dir);
    CHECK(r.code == 1);
    CHECK(r.says("calibration is measured on real runs"));
  });
  CHECK(opens == 0);
}
