// A simulated job that fails — a link down for longer than the retransmit limit — exits 5
// and reports no iteration time, throughput or MFU, in the table and in the JSON; a flap
// shorter than the limit only stalls the job, which completes and exits 0.
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;
using twinscale::test::write_text;

namespace {

// a NIC link of tiny-2tier flaps 1 ms into the run; the retransmit limit tolerates 2 ms
std::string flap_plan(double duration_s) {
  return "[retransmit]\ntimeout_per_retry_s = 0.001\nretries = 1\n[[event]]\nkind = \"link-flap\"\n"
         "link = \"server1.nic0-tor0.r0#0\"\nat_s = 0.001\nduration_s = " +
         std::to_string(duration_s) + "\n";
}

const std::string kJob = "simulate --preset tiny-1f1b --cluster tiny-2tier --gpus 32 --mode flow --faults ";

} // namespace

TEST_CASE("a link flap past the retransmit limit fails the job: exit 5, no throughput", "[cli][faults]") {
  const auto dir = scratch_dir("incomplete-flap");
  write_text(dir / "long.toml", flap_plan(10));
  const auto r = run_cli_split(kJob + (dir / "long.toml").string(), dir);
  INFO(r.out << r.err);
  CHECK(r.code == 5);
  CHECK(r.out.find("JOB FAILED") != std::string::npos);
  CHECK(r.out.find("retransmit limit") != std::string::npos);
  CHECK(r.out.find("did not complete") != std::string::npos);
  CHECK(r.out.find("tokens/s") == std::string::npos);
  CHECK(r.out.find("TFLOP/s per GPU") == std::string::npos);
  const auto j = run_cli_split(kJob + (dir / "long.toml").string() + " --json", dir);
  REQUIRE(j.code == 5);
  const auto s = nlohmann::json::parse(j.out);
  CHECK(s["completed"] == false);
  CHECK(s["tokens_per_s"].is_null());
  CHECK(s["mfu"].is_null());
  CHECK(s["iteration_time_s"].is_null());
  CHECK(s["failure"].get<std::string>().find("retransmit") != std::string::npos);
}

TEST_CASE("a link flap within the retransmit limit stalls the job, which completes with its figures", "[cli][faults]") {
  const auto dir = scratch_dir("incomplete-short-flap");
  write_text(dir / "short.toml", flap_plan(0.0005));
  const auto r = run_cli_split(kJob + (dir / "short.toml").string(), dir);
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("JOB FAILED") == std::string::npos);
  CHECK(r.out.find("tokens/s") != std::string::npos);
}
