// `twinscale probe` under mpirun (real processes): it measures every compute op and
// communication of the job's schedule, checks every transfer (#wrong), writes a
// calibration table and a cluster description that `simulate` accepts, and the
// simulation of another pipeline/data-parallel split of the job is covered 100 %.
#include <algorithm>
#include <filesystem>
#include <fstream>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "backend/detail/probe_replay.hpp"
#include "backend/probe.hpp"
#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "mpi_helpers.hpp"
#include "schedules/calibration.hpp"
#include "schedules/calibration_coverage.hpp"
#include "schedules/schedule.hpp"
#include "tests/skip.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using backend::test::fresh_dir;
using backend::test::mpirun;
using backend::test::shell;

namespace {
std::string job_text(const std::string& name, int pp, int dp, int global_batch) {
  return "name = \"" + name +
         "\"\ncluster = \"tiny-2tier\"\n[model]\nlayers = 2\nhidden = 64\nheads = 4\nseq_len = 32\nvocab = 256\n"
         "[parallel]\ntp = 1\npp = " +
         std::to_string(pp) + "\ndp = " + std::to_string(dp) +
         "\nmicro_batch = 1\nglobal_batch = " + std::to_string(global_batch) +
         "\n[schedule]\npipeline = \"1f1b\"\niterations = 1\n";
}
} // namespace

TEST_CASE("probe: measures the schedule's ops and sweeps, and covers another split", "[backend][probe]") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("probe2");
  std::ofstream(dir + "/a.toml") << job_text("probe-a", 2, 1, 4);
  std::ofstream(dir + "/b.toml") << job_text("probe-b", 1, 2, 6);
  // TWINSCALE_PROGRESS_INTERVAL_S=0: a progress line at every update, stderr piped
  const auto r = shell("env TWINSCALE_PROGRESS_INTERVAL_S=0 " + mpirun(2) + " " TWINSCALE_CLI " probe " + dir +
                           "/a.toml --repetitions 3 --warmup 1 " + "--max-sweep-bytes 65536 --out " + dir +
                           "/cal.json --cluster-out " + dir + "/host.toml",
                       120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  // Progress when stderr is not a terminal, from rank 0 only: one closing line per phase.
  const auto count_of = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = r.output.find(what); at != std::string::npos; at = r.output.find(what, at + 1)) ++n;
    return n;
  };
  CHECK(count_of("probe kernel replays 4/4 (100 %)") == 1);
  CHECK(count_of("probe kernel replays: 4/4 done in ") == 1);
  CHECK(count_of("probe transfers: ") == 1);
  CHECK(r.output.find("transfers/s") != std::string::npos);
  // The nccl-tests-style table: every row checked, none wrong.
  CHECK(r.output.find("#wrong") != std::string::npos);
  CHECK(r.output.find(" send ") != std::string::npos);
  CHECK(r.output.find(" all_reduce ") != std::string::npos);
  // nccl-tests' columns and a footer per block
  CHECK(r.output.find("size        count     type  redop   root       time    algbw    busbw #wrong") !=
        std::string::npos);
  CHECK(r.output.find("# Avg bus bandwidth    : ") != std::string::npos);
  const schedules::CalibrationTable t = schedules::read_calibration_file(dir + "/cal.json");
  CHECK(t.source == "cpu");
  const schedules::Schedule a = schedules::lower(config::load_job(dir + "/a.toml"));
  for (int64_t rank = 0; rank < a.world(); ++rank)
    for (const schedules::Op& op : a.program(rank).ops) {
      INFO("rank " << rank << " op " << a.names[op.name]);
      CHECK(schedules::covered_by(t, a, op));
      if (!op.is_communication())
        CHECK(t.find_kernel(op.kernel, schedules::DType::FP32, op.shape, a.names[op.name]) != nullptr);
    }
  for (const auto& c : t.comms) // one host: every group measured spans one host
    CHECK(c.hosts == 1);
  const auto cluster = config::load_cluster(dir + "/host.toml");
  CHECK(cluster.gpus == 2);
  // The overlap measurement (compute beside all-reduces, all-reduces beside compute) and
  // the hand-off are reported; the cluster's compute slowdown under communication is the
  // measured one: no SMs taken, a share h with h / (1 - h) = the measured slowdown.
  CHECK(r.output.find("# overlap") != std::string::npos);
  // --json: the sweeps' rows as labelled objects
  const auto js =
      shell("sh -c '" + mpirun(2) + " " TWINSCALE_CLI " probe " + dir + "/a.toml --repetitions 1 --warmup 0 " +
                "--max-sweep-bytes 1024 --no-other-splits --json --out " + dir + "/cal2.json 2>/dev/null'",
            120); // stdout only: the JSON
  INFO(js.output);
  REQUIRE(js.status == 0);
  const auto pj = nlohmann::json::parse(js.output);
  CHECK(pj.at("world") == 2);
  REQUIRE(!pj.at("sweep").empty());
  CHECK(pj.at("sweep").at(0).contains("busbw_gb_per_s"));
  CHECK(r.output.find("compute slowdown") != std::string::npos);
  CHECK(r.output.find("# hand-off") != std::string::npos);
  CHECK(cluster.gpu.kernels.nccl_sms_per_channel == 0);
  const double h = cluster.gpu.kernels.nccl_hbm_share;
  CHECK(h >= 0);
  CHECK(h < 1);
  const size_t at = r.output.find("compute slowdown ");
  REQUIRE(at != std::string::npos);
  const double measured = std::stod(r.output.substr(at + 17));
  CHECK(h / (1 - h) == Approx(measured).margin(1e-3));
  // The hand-off is the stream's idle gap before each compute op in the cluster's GPU.
  const size_t ho = r.output.find("median): ");
  REQUIRE(ho != std::string::npos);
  const double hand_off_us = std::stod(r.output.substr(ho + 9));
  CHECK(hand_off_us > 0);
  CHECK(cluster.gpu.kernels.op_issue_gap_s * 1e6 == Approx(hand_off_us).margin(0.06));
  // Configuration B: another split and micro-batch count, simulated on the probed machine.
  const auto s = shell(TWINSCALE_CLI " simulate " + dir + "/b.toml --cluster " + dir + "/host.toml --calibration " +
                           dir + "/cal.json --no-aggregate --json",
                       60);
  INFO(s.output);
  REQUIRE(s.status == 0);
  const auto j = nlohmann::json::parse(s.output.substr(s.output.find('{')));
  CHECK(j["calibration_coverage"]["op_share"].get<double>() == 1.0);
  CHECK(j["calibration_coverage"]["time_share"].get<double>() == 1.0);
  CHECK(j["iteration_time_s"].get<double>() > 0);
  fs::remove_all(dir);
}

TEST_CASE("probe: the default sweep reaches any split's whole-model gradient all-reduce", "[backend][probe]") {
  const std::string dir = fresh_dir("probe-range");
  std::ofstream(dir + "/a.toml") << job_text("probe-a", 2, 1, 4); // dp = 1: no gradient all-reduce at all
  std::ofstream(dir + "/b.toml") << job_text("probe-b", 1, 2, 6); // one stage: every layer's gradients at once
  const schedules::Schedule a = schedules::lower(config::load_job(dir + "/a.toml"));
  const schedules::Schedule b = schedules::lower(config::load_job(dir + "/b.toml"));
  double b_largest = 0;
  for (const schedules::Op& op : b.program(0).ops)
    if (op.is_collective()) b_largest = std::max(b_largest, op.bytes);
  REQUIRE(b_largest > 65536);
  for (int64_t divisor : {1, 4}) {
    INFO("shape divisor " << divisor);
    CHECK(backend::default_sweep_limit(a, divisor) >= 2 * schedules::executed_bytes(b_largest, divisor));
  }
  fs::remove_all(dir);
}

TEST_CASE("probe: the transfers of the job's other pipeline/data-parallel splits are measured at their sizes",
          "[backend][probe]") {
  const std::string dir = fresh_dir("probe-splits");
  std::ofstream(dir + "/a.toml") << job_text("probe-a", 2, 1, 4); // pp 2, dp 1: no gradient all-reduce
  std::ofstream(dir + "/b.toml") << job_text("probe-b", 1, 2, 6); // pp 1, dp 2: one all-reduce of every layer
  const schedules::Schedule a = schedules::lower(config::load_job(dir + "/a.toml"));
  const schedules::Schedule b = schedules::lower(config::load_job(dir + "/b.toml"));
  for (int64_t divisor : {1, 4}) {
    INFO("shape divisor " << divisor);
    const auto others = backend::other_split_comms(a, divisor);
    int all_reduces = 0;
    for (const schedules::Op& op : b.program(0).ops) {
      if (op.kind != schedules::OpKind::AllReduce || b.layout.group_size(op.group) != 2) continue;
      ++all_reduces;
      INFO("b's all-reduce of " << op.bytes << " B");
      CHECK(others.count({static_cast<int>(schedules::OpKind::AllReduce), 2,
                          schedules::executed_bytes(op.bytes, divisor)}) == 1);
    }
    CHECK(all_reduces > 0);
    // the job's own split is not among them: a's pipeline sends are not all-reduces
    for (const auto& [kind, n, bytes] : others) CHECK(n <= a.world());
  }
  fs::remove_all(dir);
}

TEST_CASE("probe: a launch that does not match the job is refused by name", "[backend][probe]") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("probe-bad");
  std::ofstream(dir + "/a.toml") << job_text("probe-a", 2, 1, 4);
  const auto r = shell(mpirun(1) + " " TWINSCALE_CLI " probe " + dir + "/a.toml --out " + dir + "/cal.json", 60);
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(r.output.find("-np 2") != std::string::npos);
  CHECK_FALSE(fs::exists(dir + "/cal.json"));
  fs::remove_all(dir);
}

TEST_CASE("probe: the kernel replay runs every compute op of a program and no communication", "[backend][probe]") {
  // A pipeline job: stage programs interleave sends and receives with compute, and
  // compute ops depend on receives (dropped) and on compute (kept, renumbered).
  const fs::path dir = fresh_dir("probe_replay");
  std::ofstream(dir / "a.toml") << job_text("replay", 2, 2, 8);
  const schedules::Schedule s = schedules::lower(config::load_job((dir / "a.toml").string()));
  std::vector<std::vector<uint32_t>> original;
  const schedules::Schedule c = backend::detail::compute_only(s, original);
  REQUIRE(c.programs.size() == s.programs.size());
  REQUIRE(original.size() == s.programs.size());
  for (size_t p = 0; p < s.programs.size(); ++p) {
    const auto& in = s.programs[p];
    const auto& out = c.programs[p];
    size_t compute = 0, dropped_deps = 0;
    for (const schedules::Op& op : in.ops) {
      if (op.is_communication()) continue;
      ++compute;
      for (uint32_t d : in.deps_of(op)) dropped_deps += in.ops[d].is_communication() ? 1 : 0;
    }
    CHECK(out.ops.size() == compute);
    CHECK(compute < in.ops.size()); // the program had communication
    REQUIRE(original[p].size() == out.ops.size());
    size_t kept_deps = 0;
    for (uint32_t i = 0; i < out.ops.size(); ++i) {
      const schedules::Op& op = out.ops[i];
      const schedules::Op& was = in.ops[original[p][i]];
      CHECK_FALSE(op.is_communication());
      CHECK(op.name == was.name);
      CHECK(op.shape == was.shape);
      if (i > 0) CHECK(original[p][i] > original[p][i - 1]); // program order kept
      for (uint32_t d : out.deps_of(op)) {
        REQUIRE(d < i); // renumbered into the new program, still before the op
        // the dependency names the same op as before
        const auto deps = in.deps_of(was);
        CHECK(std::find(deps.begin(), deps.end(), original[p][d]) != deps.end());
        ++kept_deps;
      }
    }
    size_t in_deps = 0;
    for (const schedules::Op& op : in.ops)
      if (!op.is_communication()) in_deps += op.dep_count;
    CHECK(kept_deps + dropped_deps == in_deps);
  }
  fs::remove_all(dir);
}
