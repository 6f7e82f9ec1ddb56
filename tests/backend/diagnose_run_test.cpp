// `twinscale diagnose` of real CPU runs (M18/M19 on real ranks): a rank whose
// compute ops are delayed (--delay-rank) is named the straggler from the run directory,
// on the host its trace and state file name, and a stopped rank (SIGSTOP) is named the
// hang everyone waits on.
#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

#include <unistd.h>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedules/trace.hpp"
#include "tests/skip.hpp"

#include "mpi_helpers.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using backend::test::fresh_dir;
using backend::test::mpirun;
using backend::test::shell;

TEST_CASE("diagnose of a real run: the rank with delayed compute is the straggler") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = fresh_dir("diagnose-delay");
  const auto r = shell(mpirun(8) +
                           " " TWINSCALE_CLI " run --synthetic 2x2x2 --synthetic-micro-batches 4 "
                           "--synthetic-hidden 64 --timeout 30 --delay-rank 6 --delay-s 0.02 --run-dir " +
                           dir + " --trace " + dir + "/trace.json",
                       180);
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto d = shell(TWINSCALE_CLI " diagnose " + dir + " --json", 60);
  INFO(d.output);
  REQUIRE(d.status == 4);
  const auto j = nlohmann::json::parse(d.output);
  std::vector<int64_t> stragglers;
  for (const auto& f : j.at("findings"))
    if (f.at("kind") == "straggler") stragglers.push_back(f.at("ranks").at(0).get<int64_t>());
  REQUIRE(!stragglers.empty());
  CHECK(stragglers.front() == 6); // the highest score
  CHECK(j.at("rank_scores").at(6).at("rank") == 6);
  CHECK(j.at("rank_scores").at(6).at("excess").get<double>() > 1.0); // own time more than doubled
  // its hosts are named as the rank states name them (the machine's own name), not host0…
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  for (const auto& f : j.at("findings"))
    if (f.at("kind") == "straggler") CHECK(f.at("host") == std::string(host));
  // the run directory states the layout the run used: diagnose does not ask for --layout
  CHECK(fs::is_regular_file(dir + "/layout.json"));
  CHECK(j.at("notes").dump().find("--layout") == std::string::npos);
  // the trace names each rank's host as the rank's state file does, and the finding names it
  std::vector<std::string> hosts;
  schedules::read_chrome_trace_file(dir + "/trace.json", &hosts);
  REQUIRE(hosts.size() == 8);
  for (int rank = 0; rank < 8; ++rank) {
    std::ifstream state(dir + "/rank-" + std::to_string(rank) + ".json");
    CHECK(nlohmann::json::parse(state).at("host") == hosts[static_cast<size_t>(rank)]);
  }
  CHECK(!hosts[6].empty());
  const auto& findings = j.at("findings");
  const auto six = std::find_if(findings.begin(), findings.end(),
                                [](const auto& f) { return f.at("kind") == "straggler" && f.at("ranks").at(0) == 6; });
  REQUIRE(six != findings.end());
  CHECK(six->at("host") == hosts[6]);
  fs::remove_all(dir);
}

TEST_CASE("diagnose of a real run: a SIGSTOPped rank is the hang the others wait on") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  if (twinscale::test::kAddressSanitizer)
    TWINSCALE_SKIP("8 AddressSanitizer ranks run slower than this hang test's time bounds");
  const std::string dir = fresh_dir("diagnose-stop");
  auto job = backend::test::spawn(mpirun(8, true) +
                                      " " TWINSCALE_CLI " run --synthetic 2x2x2 "
                                      "--synthetic-micro-batches 4000 --synthetic-hidden 128 --timeout 2 --run-dir " +
                                      dir,
                                  180);
  for (int i = 0; i < 600 && !fs::exists(dir + "/rank-7.started"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; i < 600 && !fs::exists(dir + "/rank-2.started"); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(fs::exists(dir + "/rank-2.started"));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const pid_t victim = nlohmann::json::parse(std::ifstream(dir + "/rank-2.started")).at("pid").get<pid_t>();
  REQUIRE(::kill(victim, SIGSTOP) == 0);
  int reported = 0;
  for (int i = 0; i < 600 && reported < 7; ++i) {
    reported = 0;
    for (int rank = 0; rank < 8; ++rank)
      reported += rank != 2 && fs::exists(dir + "/rank-" + std::to_string(rank) + ".json");
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::kill(victim, SIGKILL);
  const auto r = backend::test::finish(job);
  INFO(r.output);
  REQUIRE(reported == 7);
  const auto d = shell(TWINSCALE_CLI " diagnose " + dir + " --json", 60);
  INFO(d.output);
  REQUIRE(d.status == 4);
  const auto j = nlohmann::json::parse(d.output);
  REQUIRE(!j.at("findings").empty());
  CHECK(j["findings"][0]["kind"] == "hang");
  CHECK(j["findings"][0]["ranks"] == nlohmann::json::array({2}));
  CHECK_THAT(j["findings"][0]["detail"].get<std::string>(), Catch::Contains("wait on it"));
  fs::remove_all(dir);
}
