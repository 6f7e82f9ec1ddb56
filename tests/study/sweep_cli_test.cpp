// `twinscale sweep` end to end: kill -9 of the whole study or of one MPI rank mid-run,
// then the same command again, gives the store of an uninterrupted run (rows compared,
// every column); Slurm-array shards and MPI ranks give the same rows as one process.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include "study/store.hpp"
#include "tests/backend/mpi_helpers.hpp"
#include "tests/cli_runner.hpp"
#include "tests/skip.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;
namespace bt = twinscale::backend::test;

namespace {

// 16 analytic points of GPT-175B at 1,024 GPUs (~0.1–0.2 s each): slow enough to be
// killed mid-run, fast enough for the default suite.
const char* kMidStudy = R"(
name = "kill-test"
[base]
job = "gpt-175b-megascale"
cluster = "megascale-ampere"
gpus = 1024
global_batch = 256
[axes]
vpp = [1, 2, 3, 6]
micro_batch = [1, 2]
overlap_dp = [true, false]
)";

// Tiny points with a flow phase (the best 2 re-simulated in flow mode).
const char* kTinyStudy = R"(
name = "tiny-shards"
[base]
job = "tiny-megascale"
gpus = 16
[axes]
tp = [1, 2, 4]
pp = [1, 2, 4]
vpp = [1, 2]
micro_batch = [1, 2]
[evaluate]
flow_best = 2
)";

std::string write_study(const std::string& dir, const std::string& name, const char* text) {
  const std::string path = dir + "/" + name;
  std::ofstream(path) << text;
  return path;
}

/// Every column of every row, in id order (no timestamps are stored).
std::string dump(const std::string& db) {
  const study::Store store(db);
  std::string out;
  for (const auto& r : store.rows()) {
    out += r.inputs + " " + study::to_json(r.result) + " " + r.version;
    if (r.flow) out += " flow " + study::to_json(*r.flow);
    out += "\n";
  }
  return out;
}

size_t rows_in(const std::string& db) {
  try {
    return study::Store(db).done().size();
  } catch (const std::exception&) {
    return 0; // not created yet
  }
}

std::string read_proc(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Pids of `twinscale` processes whose command line names `db` (unique per test), and
/// whose MPI rank is `rank` (-1: any).
std::vector<pid_t> twinscale_pids(const std::string& db, int rank = -1) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    const std::string cmd = read_proc(e.path() / "cmdline");
    const std::string argv0 = cmd.substr(0, cmd.find('\0'));
    if (!argv0.ends_with("/twinscale") || cmd.find(db) == std::string::npos) continue;
    if (rank >= 0 && read_proc(e.path() / "environ").find("OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0') ==
                         std::string::npos)
      continue;
    out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

/// Starts `command` in the background, waits until the store holds at least `rows`
/// points, kills -9 the twinscale process (of `rank`, or the only one), waits until every
/// process of the run is gone; returns the rows stored at the kill.
size_t kill_mid_run(const std::string& command, const std::string& db, size_t rows, int rank = -1) {
  REQUIRE(std::system(("(" + command + ") > /dev/null 2>&1 &").c_str()) == 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (rows_in(db) < rows && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const auto pids = twinscale_pids(db, rank);
  REQUIRE(pids.size() == 1);
  ::kill(pids[0], SIGKILL);
  const size_t at_kill = rows_in(db);
  while (!twinscale_pids(db).empty() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  REQUIRE(twinscale_pids(db).empty());
  return at_kill;
}

} // namespace

TEST_CASE("sweep: kill -9 of the whole study mid-run, then the same command, equals an uninterrupted run",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-kill");
  const std::string study = write_study(dir, "mid.toml", kMidStudy);
  const auto ref =
      test::run_cli("sweep " + study + " --db " + dir + "/ref.db --progress never", test::Capture::StdoutAndStderr);
  REQUIRE(ref.rc == 0);
  CHECK_THAT(ref.out, Contains("points 16 of 16 done"));

  const std::string db = dir + "/killed.db";
  const std::string cmd = std::string(TWINSCALE_CLI) + " sweep " + study + " --db " + db + " --progress never";
  const size_t at_kill = kill_mid_run("exec " + cmd, db, 3);
  CHECK(at_kill >= 3);
  REQUIRE(at_kill < 16); // the kill really interrupted the study
  const auto again =
      test::run_cli("sweep " + study + " --db " + db + " --progress never", test::Capture::StdoutAndStderr);
  REQUIRE(again.rc == 0);
  CHECK_THAT(again.out, Contains(std::to_string(at_kill) + " already in"));
  CHECK(dump(db) == dump(dir + "/ref.db"));

  // A third run finds everything done and changes nothing.
  REQUIRE(test::run_cli("sweep " + study + " --db " + db + " --progress never", test::Capture::StdoutOnly).rc == 0);
  CHECK(dump(db) == dump(dir + "/ref.db"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep under mpirun: kill -9 of one rank mid-run, then the same command, equals a one-process run",
          "[study][cli][mpi]") {
  if (!bt::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = bt::fresh_dir("sweep-mpi-kill");
  const std::string study = write_study(dir, "mid.toml", kMidStudy);
  REQUIRE(test::run_cli("sweep " + study + " --db " + dir + "/ref.db --progress never", test::Capture::StdoutOnly).rc ==
          0);

  const std::string db = dir + "/mpi.db";
  const std::string cmd = bt::mpirun(2) + " " + TWINSCALE_CLI + " sweep " + study + " --db " + db + " --progress never";
  const size_t at_kill = kill_mid_run("timeout -k 5 120 " + cmd, db, 3, /*rank=*/1);
  REQUIRE(at_kill < 16);
  const auto again = bt::shell(cmd, 120);
  INFO(again.output);
  REQUIRE(again.status == 0);
  CHECK_THAT(again.output, Contains("on 2 ranks"));
  CHECK(dump(db) == dump(dir + "/ref.db"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep --shard i/n (Slurm arrays) and MPI ranks give the rows of one process, flow phase included",
          "[study][cli][mpi]") {
  const std::string dir = bt::fresh_dir("sweep-shards");
  const std::string study = write_study(dir, "tiny.toml", kTinyStudy);
  REQUIRE(test::run_cli("sweep " + study + " --db " + dir + "/one.db --progress never", test::Capture::StdoutOnly).rc ==
          0);
  const std::string one = dump(dir + "/one.db");
  CHECK_THAT(one, Contains(" flow ")); // the flow phase ran

  for (int i = 0; i < 3; ++i) {
    const auto r = test::run_cli("sweep " + study + " --db " + dir + "/shards.db --shard " + std::to_string(i) +
                                     "/3 --progress never",
                                 test::Capture::StdoutAndStderr);
    REQUIRE(r.rc == 0);
    if (i < 2) CHECK_THAT(r.out, Contains("the last shard to finish runs it"));
  }
  CHECK(dump(dir + "/shards.db") == one);

  const auto bad =
      test::run_cli("sweep " + study + " --db " + dir + "/x.db --shard 3/3", test::Capture::StdoutAndStderr);
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Contains("--shard '3/3'"));

  if (bt::have_mpirun()) {
    const auto r = bt::shell(
        bt::mpirun(3) + " " + TWINSCALE_CLI + " sweep " + study + " --db " + dir + "/mpi.db --progress never", 120);
    INFO(r.output);
    REQUIRE(r.status == 0);
    CHECK(dump(dir + "/mpi.db") == one);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep: bad study input and a changed study are clear errors, show prints and exports", "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-errors");
  auto r = test::run_cli("sweep " + dir + "/none.toml", test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains(dir + "/none.toml"));

  const std::string bad =
      write_study(dir, "bad.toml", "name = \"b\"\n[base]\njob = \"tiny-megascale\"\n[axes]\ntp = [1]\nwindow = [4]\n");
  r = test::run_cli("sweep " + bad, test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains("bad.toml") && Contains("axes.window"));

  const std::string nojob =
      write_study(dir, "nojob.toml", "name = \"b\"\n[base]\njob = \"no-such.toml\"\n[axes]\ntp = [1]\n");
  r = test::run_cli("sweep " + nojob + " --db " + dir + "/nojob.db", test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains("base.job") && Contains("no-such.toml"));

  const std::string study = write_study(dir, "tiny.toml", kTinyStudy);
  REQUIRE(test::run_cli("sweep " + study + " --db " + dir + "/t.db", test::Capture::StdoutOnly).rc == 0);
  std::string changed = kTinyStudy;
  changed.replace(changed.find("micro_batch = [1, 2]"), 20, "micro_batch = [1, 4]");
  write_study(dir, "tiny.toml", changed.c_str());
  r = test::run_cli("sweep " + study + " --db " + dir + "/t.db", test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains("belongs to study 'tiny-shards'") && Contains("delete it"));

  r = test::run_cli("sweep show " + dir + "/t.db --top 3 --csv " + dir + "/t.csv", test::Capture::StdoutOnly);
  CHECK(r.rc == 0);
  CHECK_THAT(r.out, Contains("best 3 points by MFU") && Contains("Pareto front"));
  // each point's layout in Megatron's order, as simulate and schedule show print it
  CHECK(std::regex_search(r.out,
                          std::regex(R"(  tp [0-9]+ cp [0-9]+ dp [0-9]+ pp [0-9]+ vpp [0-9]+ ep [0-9]+ mb [0-9]+)")));
  std::ifstream csv(dir + "/t.csv");
  std::string header;
  std::getline(csv, header);
  CHECK_THAT(
      header,
      Contains(
          "id,axis_tp,axis_pp,axis_vpp,axis_micro_batch,status,reason")); // axes as given, then the resolved values
  r = test::run_cli("sweep show " + dir + "/missing.db", test::Capture::StdoutAndStderr);
  CHECK(r.rc == 1);
  CHECK_THAT(r.out, Contains("missing.db"));

  // --plot DIR is a path, never shell text: no command in it runs, and a quote in a
  // folder's name is an ordinary character (the plots land in that folder)
  const std::string pwned = dir + "/PWNED";
  r = test::run_cli("sweep show " + dir + "/t.db --plot \"" + dir + "/out';touch " + pwned + ";'\"",
                    test::Capture::StdoutAndStderr);
  CHECK(r.rc == 0);
  CHECK_FALSE(std::filesystem::exists(pwned));
  CHECK(std::filesystem::exists(dir + "/out';touch " + pwned + ";'/sweep.csv"));
  r = test::run_cli("sweep show " + dir + "/t.db --plot \"" + dir + "/O'Brien plots\"", test::Capture::StdoutAndStderr);
  CHECK(r.rc == 0);
  CHECK(std::filesystem::exists(dir + "/O'Brien plots/sweep.csv"));
  if (std::filesystem::exists("/usr/bin/python3") &&
      std::system("/usr/bin/python3 -c 'import matplotlib' > /dev/null 2>&1") == 0) {
    bool png = false;
    for (const auto& e : std::filesystem::directory_iterator(dir + "/O'Brien plots"))
      png = png || e.path().extension() == ".png";
    CHECK(png); // the helper ran with the quoted folder as one argument
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("sweep --threads N: the store of one thread, byte for byte, a kill -9 mid-run resumes, flow-mode studies "
          "refuse it",
          "[study][cli]") {
  const std::string dir = bt::fresh_dir("sweep-threads");
  const std::string study = write_study(dir, "mid.toml", kMidStudy);
  const auto sweep = [&](const std::string& db, const std::string& extra) {
    return test::run_cli("sweep " + study + " --db " + db + " --progress never" + extra,
                         test::Capture::StdoutAndStderr);
  };
  REQUIRE(sweep(dir + "/one.db", "").rc == 0);
  const auto three = sweep(dir + "/three.db", " --threads 3");
  REQUIRE(three.rc == 0);
  CHECK_THAT(three.out, Contains("3 threads"));
  CHECK(dump(dir + "/three.db") == dump(dir + "/one.db"));
  CHECK(read_proc(dir + "/three.db") == read_proc(dir + "/one.db")); // written in point order

  const std::string db = dir + "/killed.db";
  const std::string cmd =
      std::string(TWINSCALE_CLI) + " sweep " + study + " --db " + db + " --progress never --threads 2";
  const size_t at_kill = kill_mid_run("exec " + cmd, db, 3);
  REQUIRE(at_kill < 16);
  const auto again = sweep(db, " --threads 2");
  REQUIRE(again.rc == 0);
  CHECK_THAT(again.out, Contains(std::to_string(at_kill) + " already in"));
  CHECK(dump(db) == dump(dir + "/one.db"));

  // the tiny study's flow phase (best 2 in flow mode) runs after the threads, on one
  const std::string tiny = write_study(dir, "tiny.toml", kTinyStudy);
  REQUIRE(
      test::run_cli("sweep " + tiny + " --db " + dir + "/tiny1.db --progress never", test::Capture::StdoutOnly).rc ==
      0);
  REQUIRE(test::run_cli("sweep " + tiny + " --db " + dir + "/tiny3.db --progress never --threads 3",
                        test::Capture::StdoutOnly)
              .rc == 0);
  CHECK(dump(dir + "/tiny3.db") == dump(dir + "/tiny1.db"));

  const std::string flow = write_study(dir, "flow.toml", R"(
name = "flow-threads"
[base]
job = "tiny-megascale"
gpus = 16
[axes]
tp = [1, 2]
[evaluate]
mode = "flow"
)");
  const auto refused =
      test::run_cli("sweep " + flow + " --db " + dir + "/flow.db --threads 2", test::Capture::StdoutAndStderr);
  CHECK(refused.rc == 1);
  CHECK_THAT(refused.out, Contains("--threads 2") && Contains("flow mode") && Contains("--shard"));
  CHECK_FALSE(std::filesystem::exists(dir + "/flow.db"));
  // --threads 0 (one per hardware thread) runs such a study on one
  const auto automatic = test::run_cli("sweep " + flow + " --db " + dir + "/flow.db --threads 0 --progress never",
                                       test::Capture::StdoutAndStderr);
  CHECK(automatic.rc == 0);
  CHECK_THAT(automatic.out, Contains("1 thread)"));
  std::filesystem::remove_all(dir);
}
