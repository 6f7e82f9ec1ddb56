// `twinscale compare` says when two traces cannot be compared, or only in part, instead of
// printing errors that mean nothing: no op in common (refused), ranks one trace lacks,
// collectives without instance names, a CPU run against a simulation of GPUs.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;
using namespace twinscale;

namespace {

/// The trace at `from`, every time multiplied by `scale`, its source set to `source`,
/// and the collectives' instance names dropped unless `keep_instances`.
void rewrite_trace(const fs::path& from, const fs::path& to, double scale, const std::string& source,
                   bool keep_instances) {
  auto j = nlohmann::json::parse(test::slurp(from));
  j["source"] = source;
  for (auto& e : j["traceEvents"]) {
    if (e.contains("ts")) e["ts"] = e["ts"].get<double>() * scale;
    if (e.contains("dur")) e["dur"] = e["dur"].get<double>() * scale;
    if (!keep_instances && e.contains("args")) e["args"].erase("instance");
  }
  test::write_text(to, j.dump());
}

} // namespace

TEST_CASE("compare: traces with no op in common are refused, naming both and why", "[cli]") {
  const fs::path dir = test::scratch_dir("compare-disjoint");
  const std::string sim = "simulate --preset tiny-1f1b --mode analytic --no-aggregate --trace ";
  REQUIRE(test::run_cli_split(sim + (dir / "a.json").string() + " --ranks 0-3", dir).code == 0);
  REQUIRE(test::run_cli_split(sim + (dir / "b.json").string() + " --ranks 4-7", dir).code == 0);
  const auto r = test::run_cli_split("compare " + (dir / "a.json").string() + " " + (dir / "b.json").string(), dir);
  CHECK(r.code == 1);
  CHECK_THAT(r.err, Catch::Contains("a.json (4 rank(s))") && Catch::Contains("nothing to compare"));
  fs::remove_all(dir);
}

TEST_CASE("compare: an aggregated simulation's missing ranks and a trace without instances are named", "[cli]") {
  const fs::path dir = test::scratch_dir("compare-partial");
  REQUIRE(test::run_cli_split(
              "simulate --preset tiny-1f1b --mode analytic --no-aggregate --trace " + (dir / "all.json").string(), dir)
              .code == 0);
  REQUIRE(
      test::run_cli_split("simulate --preset tiny-1f1b --mode analytic --trace " + (dir / "some.json").string(), dir)
          .code == 0);
  auto r = test::run_cli_split(
      "compare " + (dir / "all.json").string() + " " + (dir / "some.json").string() + " --json", dir);
  REQUIRE(r.code == 0);
  auto notes = nlohmann::json::parse(r.out)["notes"];
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0].get<std::string>(),
             Catch::Contains("some.json lacks 6 of the 8 ranks") && Catch::Contains("--no-aggregate"));
  CHECK_THAT(r.err, Catch::Contains("note: "));

  rewrite_trace(dir / "all.json", dir / "bare.json", 1.0, "sim", false);
  r = test::run_cli_split("compare " + (dir / "all.json").string() + " " + (dir / "bare.json").string() + " --json",
                          dir);
  REQUIRE(r.code == 0);
  notes = nlohmann::json::parse(r.out)["notes"];
  REQUIRE(notes.size() == 1);
  CHECK_THAT(notes[0].get<std::string>(), Catch::Contains("bare.json names no collective instances"));
  fs::remove_all(dir);
}

TEST_CASE("compare: a CPU run far from a simulation of GPUs says how to compare like with like", "[cli]") {
  const fs::path dir = test::scratch_dir("compare-cpu-sim");
  REQUIRE(test::run_cli_split(
              "simulate --preset tiny-1f1b --mode analytic --no-aggregate --trace " + (dir / "sim.json").string(), dir)
              .code == 0);
  rewrite_trace(dir / "sim.json", dir / "run.json", 100.0, "cpu", true); // a run 100 times slower
  auto r = test::run_cli_split("compare " + (dir / "run.json").string() + " " + (dir / "sim.json").string(), dir);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.err, Catch::Contains("the spans differ by -99.00%") && Catch::Contains("--calibration"));
  // the same trace against itself: nothing to say
  r = test::run_cli_split("compare " + (dir / "sim.json").string() + " " + (dir / "sim.json").string(), dir);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("note:") == std::string::npos);
  fs::remove_all(dir);
}
