// One layout notation: every header names the parallel dimensions the job uses in
// Megatron-Core's names and order (tp × cp × dp × pp, ep after it), cp and ep in the
// JSON too; the MoE all-to-alls are EP communication, not TP's; flags read TPxDPxPP or
// named parts; a cluster is named by its own name; --one-thread changes no figure.
#include <filesystem>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;
using Catch::Contains;
using twinscale::test::Capture;
using twinscale::test::run_cli;

TEST_CASE("simulate header: cp and ep are shown where the job uses them, in Megatron's order", "[cli]") {
  auto r = run_cli("simulate --preset tiny-cp --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("(tp 2 × cp 2 × dp 1 × pp 2)") && Contains("exposed TP+CP comm"));
  r = run_cli("simulate --preset tiny-moe --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains(", ep 2)"));
  r = run_cli("simulate --preset tiny-1f1b --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("(tp 2 × dp 2 × pp 2)"));
  r = run_cli("schedule show --preset tiny-cp", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("= tp 2 × cp 2 × dp 1 × pp 2;"));
}

TEST_CASE("simulate: the MoE all-to-alls are EP communication, in the table and the JSON", "[cli]") {
  auto r = run_cli("simulate --preset tiny-moe --mode analytic --json", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["layout"] == nlohmann::json({{"tp", 2}, {"cp", 1}, {"ep", 2}, {"dp", 2}, {"pp", 2}}));
  CHECK(j["breakdown"]["exposed_ep_s"].get<double>() > 0);
  double sum = 0; // the parts still add up to the run
  for (const char* k :
       {"compute_s", "exposed_tp_s", "exposed_ep_s", "exposed_pp_s", "exposed_dp_s", "bubble_s", "idle_s"})
    sum += j["breakdown"][k].get<double>();
  CHECK(sum == Approx(j["makespan_s"].get<double>()).epsilon(1e-9));
  r = run_cli("simulate --preset tiny-moe --mode analytic", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK_THAT(r.out, Contains("exposed EP comm") && Contains("exp_ep"));
  // a dense job has no EP row, and its EP time is zero
  r = run_cli("simulate --preset tiny-1f1b --mode analytic --json", Capture::StdoutOnly);
  REQUIRE(r.rc == 0);
  CHECK(nlohmann::json::parse(r.out)["breakdown"]["exposed_ep_s"].get<double>() == 0);
}

TEST_CASE("layout flags: TPxDPxPP in Megatron's order or named parts, one meaning everywhere", "[cli]") {
  auto a = run_cli("topology ecmp tiny-3tier --job 2x4x8", Capture::StdoutOnly);
  auto b = run_cli("topology ecmp tiny-3tier --job pp8xtp2xdp4", Capture::StdoutOnly);
  REQUIRE(a.rc == 0);
  CHECK(a.out == b.out);
  CHECK_THAT(a.out, Contains("job tp 2 × dp 4 × pp 8"));
  auto bad = run_cli("topology ecmp tiny-3tier --job tp2xqq4", Capture::StdoutAndStderr);
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Contains("'qq4' is not a layout part") && Contains("TPxDPxPP"));
  bad = run_cli("topology ecmp tiny-3tier --job tp2xcp2xdp2xpp2", Capture::StdoutAndStderr);
  CHECK(bad.rc == 1);
  CHECK_THAT(bad.out, Contains("no cp or ep"));
}

TEST_CASE("simulate header: a cluster file is named by its own name, the file beside it", "[cli]") {
  const fs::path dir = twinscale::test::scratch_dir("cluster-own-name");
  auto text = twinscale::test::slurp(fs::path(TWINSCALE_SOURCE_DIR) / "presets/clusters/tiny-2tier.toml");
  const auto at = text.find("name = ");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('\n', at) - at, "name = \"lab-cluster\"");
  twinscale::test::write_text(dir / "c.toml", text);
  const auto r = twinscale::test::run_cli_split(
      "simulate --preset tiny-1f1b --mode analytic --cluster " + (dir / "c.toml").string(), dir);
  REQUIRE(r.code == 0);
  CHECK_THAT(r.out, Contains("on lab-cluster (" + (dir / "c.toml").string() + ")"));
  fs::remove_all(dir);
}

TEST_CASE("simulate --one-thread: the same report as with the helper thread", "[cli]") {
  for (const char* preset : {"tiny-interleaved", "tiny-megascale", "gpt-175b-megascale"}) {
    INFO(preset);
    const std::string run = std::string("simulate --preset ") + preset + " --mode analytic --json";
    const auto with_helper = run_cli(run, Capture::StdoutOnly);
    const auto alone = run_cli(run + " --one-thread", Capture::StdoutOnly);
    REQUIRE(with_helper.rc == 0);
    REQUIRE(alone.rc == 0);
    CHECK(with_helper.out == alone.out);
  }
}
