// Whole runs under mpirun (real processes, real bytes): every op ran in an order the
// schedule's semantics allow; and kill -9 of one rank mid-run makes every other rank
// stop within the timeout with a report naming the dead rank (M19).
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/skip.hpp"

#include "backend/checkpoint.hpp"
#include "backend/trace_check.hpp"
#include "config/job_file.hpp"
#include "diagnose/hang_report.hpp"
#include "mpi_helpers.hpp"
#include "schedules/calibration.hpp"
#include "schedules/synthetic.hpp"
#include "schedules/trace.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using backend::test::fresh_dir;
using backend::test::mpirun;
using backend::test::shell;

TEST_CASE("mpi run: 8 CPU ranks run the synthetic schedule in a valid order") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("run8");
  const auto r = shell(mpirun(8) +
                           " " TWINSCALE_CLI " run --synthetic 2x2x2 --synthetic-micro-batches 3 "
                           "--synthetic-hidden 64 --timeout 20 --run-dir " +
                           dir,
                       120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  schedules::SyntheticOptions so;
  so.micro_batches = 3;
  so.hidden = so.tokens = 64;
  const schedules::Schedule s = schedules::synthetic_schedule(schedules::Layout{2, 2, 2}, so);
  const diagnose::HangReport report = diagnose::analyse_run_dir(dir, 8);
  REQUIRE(report.all_completed());
  std::vector<schedules::TraceEvent> events;
  for (const auto& st : report.states) events.insert(events.end(), st.events.begin(), st.events.end());
  const auto violations = backend::check_trace_semantics(s, events);
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
  fs::remove_all(dir);
}

namespace {

/// Runs `args` on `ranks` CPU ranks and checks the events of every rank against `s`.
/// With `simulate`, also simulates `args` with every rank executed and checks the
/// simulator's trace against `s` with the same checker (one statement of the rules).
void run_and_check(const schedules::Schedule& s, int ranks, const std::string& args, const std::string& name,
                   bool calibrate = false, bool simulate = false) {
  const std::string dir = fresh_dir(name);
  const auto r = shell(mpirun(ranks) + " " TWINSCALE_CLI " run " + args + " --timeout 30 --run-dir " + dir +
                           " --trace " + dir + "/trace.json",
                       240);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(fs::exists(dir + "/trace.json"));
  const diagnose::HangReport report = diagnose::analyse_run_dir(dir, ranks);
  REQUIRE(report.all_completed());
  std::vector<schedules::TraceEvent> events;
  for (const auto& st : report.states) events.insert(events.end(), st.events.begin(), st.events.end());
  size_t ops = 0;
  for (int64_t rank = 0; rank < s.world(); ++rank) ops += s.program(rank).ops.size();
  CHECK(events.size() == ops);
  const auto violations = backend::check_trace_semantics(s, events);
  for (size_t i = 0; i < std::min<size_t>(violations.size(), 20); ++i) UNSCOPED_INFO(violations[i]);
  CHECK(violations.empty());
  if (simulate) { // the simulator's trace of the same schedule, through the same checker
    const auto sim = shell(TWINSCALE_CLI " simulate " + args + " --no-aggregate --trace " + dir + "/sim.json", 120);
    INFO(sim.output);
    REQUIRE(sim.status == 0);
    std::vector<schedules::TraceEvent> simulated;
    for (const auto& t : schedules::read_chrome_trace_file(dir + "/sim.json"))
      simulated.push_back({t.rank, t.op_index, t.start_s, t.start_s + t.duration_s, t.failed});
    CHECK(simulated.size() == ops);
    const auto sim_violations = backend::check_trace_semantics(s, simulated, 2e-6); // µs in the file
    for (size_t i = 0; i < std::min<size_t>(sim_violations.size(), 20); ++i) UNSCOPED_INFO(sim_violations[i]);
    CHECK(sim_violations.empty());
  }
  if (calibrate) { // the real trace → compare with itself, and a calibration table
    const auto cmp = shell(TWINSCALE_CLI " compare " + dir + "/trace.json " + dir + "/trace.json --json", 60);
    REQUIRE(cmp.status == 0);
    const auto j = nlohmann::json::parse(cmp.output);
    CHECK(j.at("matched").get<size_t>() == ops);
    for (const auto& k : j.at("kinds")) CHECK(k.at("max_abs_rel_error").get<double>() == 0.0);
    const auto cal = shell("sh -c '" TWINSCALE_CLI " calibrate " + dir + "/trace.json " + args + " --out " + dir +
                               "/cal.json --json 2>/dev/null'",
                           60); // stdout only: the JSON
    INFO(cal.output);
    REQUIRE(cal.status == 0);
    const auto cj = nlohmann::json::parse(cal.output); // --json: the summary and the table
    CHECK(cj.at("kernel_entries").get<size_t>() > 0);
    CHECK(cj.at("table").is_object());
    const schedules::CalibrationTable t = schedules::read_calibration_file(dir + "/cal.json");
    CHECK(t.source == "cpu");
    CHECK(!t.kernels.empty());
    CHECK(!t.comms.empty());
    for (const auto& k : t.kernels) CHECK(k.dtype == schedules::DType::FP32); // the CPU device computes in fp32
    for (const auto& c : t.comms) CHECK(c.busbw_bytes_per_s > 0);
  }
  fs::remove_all(dir);
}

} // namespace

// tiny-1f1b is also simulated: the same checker accepts the backend's and the
// simulator's traces of one schedule.
TEST_CASE("mpi run: the tiny presets run on 8 CPU ranks in a valid order") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  for (const std::string preset : {"tiny-1f1b", "tiny-interleaved", "tiny-megascale", "tiny-moe", "tiny-fsdp",
                                   "tiny-cp", "tiny-zb", "tiny-fp8", "tiny-moe-hier", "tiny-moe-node-limited"}) {
    INFO(preset);
    schedules::LoweringTarget target;
    target.check_memory = false;
    const schedules::Schedule s = schedules::lower(config::load_job_preset(preset), target);
    run_and_check(s, 8, "--preset " + preset, preset, preset == "tiny-megascale", preset == "tiny-1f1b");
  }
}

// MoE parallel folding: ep 4 over a stage's tp 2 × dp 2 ranks, the all-to-all across TP
// ranks; the simulator's trace of the same schedule passes the same checker.
TEST_CASE("mpi run: tiny-moe-folded runs on 8 CPU ranks in a valid order") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  schedules::LoweringTarget target;
  target.check_memory = false;
  const schedules::Schedule s = schedules::lower(config::load_job_preset("tiny-moe-folded"), target);
  REQUIRE(s.layout.folded_experts());
  run_and_check(s, 8, "--preset tiny-moe-folded", "tiny-moe-folded", false, true);
}

TEST_CASE("mpi run: 16 CPU ranks (tp2 pp2 dp4) run the synthetic schedule in a valid order") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  schedules::SyntheticOptions so;
  so.micro_batches = 2;
  so.hidden = so.tokens = 32;
  run_and_check(schedules::synthetic_schedule(schedules::Layout{2, 4, 2}, so), 16,
                "--synthetic 2x4x2 --synthetic-micro-batches 2 --synthetic-hidden 32", "run16");
}

namespace {

/// 8 ranks of a long synthetic 2x2x2 run with `--run-dir dir`; returns once every rank has
/// started executing (its rank-R.started file exists) and half a second more.
backend::test::Job spawn_synthetic_8(const std::string& dir, double timeout_s) {
  auto job = backend::test::spawn(mpirun(8, true) +
                                      " " TWINSCALE_CLI " run --synthetic 2x2x2 "
                                      "--synthetic-micro-batches 400 --synthetic-hidden 128 --timeout " +
                                      std::to_string(timeout_s) + " --run-dir " + dir,
                                  180);
  for (int i = 0; i < 600; ++i) {
    int started = 0;
    for (int r = 0; r < 8; ++r) started += fs::exists(dir + "/rank-" + std::to_string(r) + ".started");
    if (started == 8) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  return job;
}

/// The pid that rank `rank` wrote into its rank-R.started file.
pid_t started_pid(const std::string& dir, int rank) {
  const std::string file = dir + "/rank-" + std::to_string(rank) + ".started";
  REQUIRE(fs::exists(file));
  return nlohmann::json::parse(std::ifstream(file)).at("pid").get<pid_t>();
}

} // namespace

TEST_CASE("mpi run: kill -9 of one rank, the others stop within the timeout and name it") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("kill");
  const double timeout_s = 3;
  auto job = spawn_synthetic_8(dir, timeout_s);
  REQUIRE(::kill(started_pid(dir, 3), SIGKILL) == 0);
  const auto killed_at = fs::file_time_type::clock::now();
  const auto r = backend::test::finish(job);
  INFO(r.output);
  REQUIRE(fs::exists(dir + "/report.json"));
  const diagnose::HangReport report = diagnose::analyse_run_dir(dir, 8);
  CHECK(report.silent == std::vector<int64_t>{3});
  REQUIRE(!report.suspects.empty());
  CHECK(report.suspects[0].rank == 3);
  CHECK(report.suspects[0].logged_nothing);
  CHECK(!report.suspects[0].waited_on_by.empty());
  REQUIRE(report.states.size() == 7);
  int timed_out = 0;
  for (const auto& st : report.states) {
    INFO("rank " << st.rank);
    // The first ranks to give up time out; they raise the abort flag and the rest stop.
    CHECK((st.status == records::RunStatus::TimedOut || st.status == records::RunStatus::Aborted));
    timed_out += st.status == records::RunStatus::TimedOut;
    CHECK(!st.waiting.empty());
    // Stopped within the timeout of the kill (plus scheduling slack on an oversubscribed
    // machine): a rank may go on with work that does not need the dead rank, but the
    // first waiter times out at most timeout_s after the kill and aborts the others.
    const auto written = fs::last_write_time(dir + "/rank-" + std::to_string(st.rank) + ".json");
    const double after_kill_s = std::chrono::duration<double>(written - killed_at).count();
    CHECK(after_kill_s < timeout_s + 4.0);
  }
  CHECK(timed_out >= 1);
  const auto j = nlohmann::json::parse(std::ifstream(dir + "/report.json"));
  CHECK(j.at("suspects").at(0).at("rank") == 3);
  fs::remove_all(dir);
}

TEST_CASE("mpi run: SIGSTOP of one rank, the others report it within the timeout (its sockets stay open)") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  if (twinscale::test::kAddressSanitizer)
    TWINSCALE_SKIP("8 AddressSanitizer ranks run slower than this hang test's time bounds");
  const std::string dir = fresh_dir("stop");
  const double timeout_s = 2;
  auto job = spawn_synthetic_8(dir, timeout_s);
  const pid_t victim = started_pid(dir, 5);
  REQUIRE(::kill(victim, SIGSTOP) == 0);
  const auto stopped_at = fs::file_time_type::clock::now();
  // The survivors report while rank 5 is stopped (not dead: no connection error helps).
  int reported = 0;
  for (int i = 0; i < 600 && reported < 7; ++i) {
    reported = 0;
    for (int r = 0; r < 8; ++r) reported += r != 5 && fs::exists(dir + "/rank-" + std::to_string(r) + ".json");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(victim, SIGKILL); // lets mpirun finish
  const auto r = backend::test::finish(job);
  INFO(r.output);
  REQUIRE(reported == 7);
  const diagnose::HangReport report = diagnose::analyse_run_dir(dir, 8);
  REQUIRE(!report.suspects.empty());
  CHECK(report.suspects[0].rank == 5);
  for (const auto& st : report.states) {
    if (st.rank == 5) continue;
    INFO("rank " << st.rank);
    CHECK((st.status == records::RunStatus::TimedOut || st.status == records::RunStatus::Aborted));
    const auto written = fs::last_write_time(dir + "/rank-" + std::to_string(st.rank) + ".json");
    CHECK(std::chrono::duration<double>(written - stopped_at).count() < timeout_s + 4.0);
  }
  fs::remove_all(dir);
}

TEST_CASE("mpi run: a slow but healthy rank (stopped and resumed, each pause under the timeout) is not reported") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("slow");
  auto job = backend::test::spawn(mpirun(8, true) +
                                      " " TWINSCALE_CLI " run --synthetic 2x2x2 "
                                      "--synthetic-micro-batches 500 --synthetic-hidden 128 --timeout 2 --run-dir " +
                                      dir,
                                  180);
  for (int i = 0; i < 600 && !fs::exists(dir + "/rank-5.started"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(fs::exists(dir + "/rank-5.started"));
  const pid_t slow = nlohmann::json::parse(std::ifstream(dir + "/rank-5.started")).at("pid").get<pid_t>();
  // Rank 5 runs at half speed: 0.3 s stopped, 0.3 s running, until it has finished.
  int pauses = 0;
  while (!fs::exists(dir + "/rank-5.json") && pauses < 100) {
    if (::kill(slow, SIGSTOP) != 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(slow, SIGCONT);
    ++pauses;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
  }
  ::kill(slow, SIGCONT);
  const auto r = backend::test::finish(job);
  INFO(r.output << "pauses: " << pauses);
  CHECK(pauses >= 2); // it really was slowed down
  const diagnose::HangReport report = diagnose::analyse_run_dir(dir, 8);
  CHECK(report.all_completed());
  CHECK(!fs::exists(dir + "/abort"));
  fs::remove_all(dir);
}

TEST_CASE("mpi run: tiny-1f1b on 8 oversubscribed ranks with a short timeout is not a hang", "[timing]") {
  // [timing]: runs alone (RUN_SERIAL): a neighbouring test's load can hold a rank past 0.5 s
  // A receive posted early aged while its rank computed and was reported as
  // hung at --timeout 0.5. Progress is now a completed op, not an op's age.
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  // With --run-dir, a rank whose peers are slow (this machine is oversubscribed and
  // shared) but progressing keeps waiting (cross-rank progress files).
  const std::string dir = fresh_dir("short-timeout");
  const auto r = shell(mpirun(8) + " " TWINSCALE_CLI " run --preset tiny-1f1b --timeout 0.5 --run-dir " + dir, 120);
  INFO(r.output);
  CHECK(r.status == 0);
  fs::remove_all(dir);
}

TEST_CASE("mpi run: kill -9 during the checkpoint persist leaves the last good checkpoint restorable") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("ckpt-kill");
  const std::string ckpt = dir + "/ckpt";
  const std::string common = " " TWINSCALE_CLI
                             " run --synthetic 2x2x2 --synthetic-micro-batches 2 --synthetic-hidden 32 "
                             "--timeout 3 --checkpoint-dir " +
                             ckpt;
  // 1. A good checkpoint, step 1.
  auto r = shell(mpirun(8) + common + " --run-dir " + dir + "/run1 --checkpoint-step 1 --checkpoint-bytes 65536", 120);
  INFO(r.output);
  REQUIRE(r.status == 0);
  REQUIRE(backend::latest_complete_step(ckpt) == 1);
  // 2. Step 2 persists slowly (1 MB at 200 kB/s); kill a shard writer (rank 5: tp1 dp0 pp1) meanwhile.
  auto job =
      backend::test::spawn(mpirun(8, true) + common + " --run-dir " + dir +
                               "/run2 --checkpoint-step 2 --checkpoint-bytes 1000000 --checkpoint-persist-bw 200000",
                           120);
  const std::string tmp_prefix = "shard-tp1-pp1.bin.tmp.";
  bool persisting = false;
  for (int i = 0; i < 600 && !persisting; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(backend::step_dir(ckpt, 2), ec))
      persisting = persisting || e.path().filename().string().rfind(tmp_prefix, 0) == 0;
  }
  REQUIRE(persisting);
  const auto info = nlohmann::json::parse(std::ifstream(dir + "/run2/rank-5.started"));
  REQUIRE(::kill(info.at("pid").get<pid_t>(), SIGKILL) == 0);
  r = backend::test::finish(job);
  INFO(r.output);
  // The survivors end by themselves (their --timeout, or the abort flag a peer raised while
  // they still waited at the start barrier), not at the test's limit (timeout's status 124).
  CHECK(r.status != 124);
  CHECK_FALSE(fs::exists(backend::step_dir(ckpt, 2) + "/manifest.json"));
  CHECK(backend::latest_complete_step(ckpt) == 1);
  // 3. Restore: one reader per DP group, broadcast, every rank checks its state.
  r = shell(mpirun(8) + common + " --run-dir " + dir + "/run3 --restore", 120);
  INFO(r.output);
  CHECK(r.status == 0);
  CHECK_THAT(r.output, Catch::Contains("restored checkpoint step 1"));
  fs::remove_all(dir);
}

TEST_CASE("mpi run: bad launches and options are errors that say what would be valid") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  auto r = shell(mpirun(2) + " " TWINSCALE_CLI " run --preset tiny-1f1b --timeout 10", 60);
  CHECK(r.status != 0);
  CHECK_THAT(r.output, Catch::Contains("needs 8") && Catch::Contains("-np 8"));
  r = shell(TWINSCALE_CLI " run --synthetic 2x2 --timeout 5", 30);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("TPxDPxPP"));
  r = shell(TWINSCALE_CLI " run --synthetic 1x1x1 --rendezvous tcp://x", 30);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("redis://HOST:PORT"));
  r = shell(TWINSCALE_CLI " run --preset tiny-1f1b --synthetic 1x1x1", 30);
  CHECK(r.status == 2);                                   // usage
  for (const std::string t : {"nan", "inf", "-1", "0"}) { // nan/inf would switch the watchdog off
    r = shell(TWINSCALE_CLI " run --synthetic 1x1x1 --timeout " + t, 30);
    INFO(t << ": " << r.output);
    CHECK(r.status == 1);
    // nan/inf: refused by the CLI's rule for every number option; -1 and 0 by run's own
    const bool non_finite = t == "nan" || t == "inf";
    CHECK_THAT(r.output, Catch::Contains(non_finite ? "--timeout '" + t + "'" : "--timeout " + t) &&
                             Catch::Contains(non_finite ? "not a finite number" : "finite positive"));
  }
  r = shell(TWINSCALE_CLI " run --synthetic 1x1x1 --restore", 30);
  CHECK(r.status == 1);
  CHECK_THAT(r.output, Catch::Contains("--checkpoint-dir"));
  // A one-rank run needs no launcher at all; --json gives rank 0's outcome on stdout.
  r = shell("sh -c 'env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 " TWINSCALE_CLI
            " run --synthetic 1x1x1 --timeout 30 --json 2>/dev/null'",
            60);
  REQUIRE(r.status == 0);
  const auto j = nlohmann::json::parse(r.output);
  CHECK(j.at("all_ranks_completed") == true);
  CHECK(j.at("rank0").at("status") == "completed");
}
