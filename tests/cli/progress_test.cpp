// Progress reports on stderr: a plain line per interval when stderr is not a terminal
// (TWINSCALE_PROGRESS_INTERVAL_S=0 here: a line at every update, so no test waits on the
// clock), none with --quiet, and an ETA that does not count the setup before the first
// update.
#include <string>

#include <catch2/catch.hpp>

#include "common/progress.hpp"
#include "tests/cli_runner.hpp"

using twinscale::Progress;
using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;

namespace {

const char* kEveryUpdate = "TWINSCALE_PROGRESS_INTERVAL_S=0 ";

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
  return n;
}

} // namespace

TEST_CASE("progress ETA uses the rate since the first update, not the setup before it", "[progress]") {
  Progress p("units", 1000, "units");
  REQUIRE(p.shown());
  const double t0 = p.start_s();
  p.update_at(100, t0 + 10); // 10 s of setup, then 100 units at once
  p.update_at(200, t0 + 11); // 100 units in the next second
  CHECK(p.rate() == Approx(100));
  CHECK(p.eta_s() == Approx(8)); // 800 left at 100/s (elapsed/done would say 44 s)
  p.update_at(1000, t0 + 19);
  CHECK(p.eta_s() == 0);
}

TEST_CASE("progress ETA is unknown before anything is done", "[progress]") {
  Progress p("units", 10, "units");
  p.update_at(0, p.start_s() + 1);
  CHECK(p.eta_s() < 0);
}

TEST_CASE("collective piped prints a progress line per size and --quiet none", "[progress]") {
  const auto dir = scratch_dir("progress-collective");
  const std::string args = "collective --cluster tiny-h100 --gpus 8 --min-bytes 1K --max-bytes 16K --factor 2";
  const auto r = run_cli_split(args, dir, kEveryUpdate);
  REQUIRE(r.code == 0);
  CHECK(count_of(r.err, "collective sizes ") == 5); // one line per size
  CHECK(r.says("collective sizes 5/5 (100 %)"));
  CHECK(r.says("collective sizes: 5/5 done in "));
  CHECK(r.says("sizes/s"));
  CHECK(r.says("ETA 0 s"));
  CHECK(r.out.find("collective sizes") == std::string::npos); // stdout stays the table
  const auto q = run_cli_split(args + " --quiet", dir, kEveryUpdate);
  REQUIRE(q.code == 0);
  CHECK(q.out == r.out);
  CHECK(!q.says("collective sizes"));
}

TEST_CASE("simulate piped reports simulated ops with a rate and an ETA", "[progress]") {
  const auto dir = scratch_dir("progress-simulate");
  // per-GPU speeds: every replica differs, so every rank's ops are executed
  const std::string args = "simulate --preset tiny-megascale --every-rank --mode analytic --gpu-speed-dist normal:0.05";
  const auto r = run_cli_split(args, dir, kEveryUpdate);
  REQUIRE(r.code == 0);
  CHECK(r.says("simulated ops 4096/"));
  CHECK(r.says(" ops/s, "));
  CHECK(r.says("done in ")); // the closing line, with the final count
  CHECK(r.says("ETA "));
  const auto q = run_cli_split(args + " --quiet", dir, kEveryUpdate);
  REQUIRE(q.code == 0);
  CHECK(!q.says("simulated ops"));
  CHECK(q.out == r.out);
}

TEST_CASE("simulate piped at the default interval prints no line for a short run", "[progress]") {
  const auto dir = scratch_dir("progress-default");
  const auto r = run_cli_split("simulate --preset tiny-megascale --mode analytic", dir);
  REQUIRE(r.code == 0);
  CHECK(!r.says("simulated ops"));
}

TEST_CASE("campaign piped reports its seeds", "[progress]") {
  const auto dir = scratch_dir("progress-campaign");
  const std::string args = "campaign --preset tiny-megascale --iteration-time 1 --seeds 4";
  const auto r = run_cli_split(args, dir, kEveryUpdate);
  REQUIRE(r.code == 0);
  CHECK(r.says("campaign seeds 4/4 (100 %)"));
  CHECK(r.says("seeds/s"));
  const auto q = run_cli_split(args + " --quiet", dir, kEveryUpdate);
  REQUIRE(q.code == 0);
  CHECK(!q.says("campaign seeds"));
}

TEST_CASE("sweep piped reports its points and the best so far, --quiet none", "[progress]") {
  const auto dir = scratch_dir("progress-sweep");
  twinscale::test::write_text(dir / "s.toml", "name = \"progress\"\n[base]\njob = \"tiny-megascale\"\ngpus = 16\n"
                                              "[axes]\ntp = [1, 2]\npp = [1, 2]\n");
  const std::string study = (dir / "s.toml").string();
  const auto r = run_cli_split("sweep " + study + " --db " + (dir / "a.db").string(), dir, kEveryUpdate);
  REQUIRE(r.code == 0);
  CHECK(count_of(r.err, "sweep ") >= 4); // a line per point
  CHECK(r.says("sweep 4/4 (100 %)"));
  CHECK(r.says("points/s"));
  CHECK(r.says("best MFU"));
  const auto q = run_cli_split("sweep " + study + " --quiet --db " + (dir / "b.db").string(), dir, kEveryUpdate);
  REQUIRE(q.code == 0);
  CHECK(!q.says("sweep 4/4"));
}
