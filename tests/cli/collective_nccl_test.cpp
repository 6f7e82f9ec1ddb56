// `twinscale collective` follows nccl-tests' conventions: the out-of-place and in-place
// column groups (size count type redop root | time algbw busbw #wrong), the "Avg bus
// bandwidth" footer, its flags (-b -e -f -n -w -c -d -o -r, -J for JSON), and a header
// that agrees with the rows.
#include <sstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "tests/cli_runner.hpp"

using twinscale::test::run_cli_split;
using twinscale::test::scratch_dir;
using twinscale::test::slurp;

namespace {

/// The table's rows (lines not starting with '#'), split at spaces.
std::vector<std::vector<std::string>> rows_of(const std::string& out) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream words(line);
    std::vector<std::string> row;
    for (std::string w; words >> w;) row.push_back(w);
    rows.push_back(row);
  }
  return rows;
}

} // namespace

TEST_CASE("collective prints nccl-tests' out-of-place and in-place groups and footer", "[cli][nccl]") {
  const auto dir = scratch_dir("nccl-table");
  const auto r = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1K -e 4K -f 2 --mode analytic", dir);
  REQUIRE(r.code == 0);
  CHECK(r.out.find("out-of-place") != std::string::npos);
  CHECK(r.out.find("in-place") != std::string::npos);
  CHECK(r.out.find("size        count     type  redop   root       time    algbw    busbw #wrong       time    algbw"
                   "    busbw #wrong") != std::string::npos);
  const auto rows = rows_of(r.out);
  REQUIRE(rows.size() == 3);
  double sum = 0;
  for (const auto& row : rows) {
    REQUIRE(row.size() == 15); // 5 labels, 2 × (time algbw busbw #wrong), proto, channels
    CHECK(row[3] == "sum");
    CHECK(row[4] == "-1");   // all-reduce has no root
    CHECK(row[5] == row[9]); // in-place: the same simulated time
    CHECK(row[8] == "N/A");  // nothing moved, nothing checked
    sum += std::stod(row[7]);
  }
  const auto at = r.out.find("# Avg bus bandwidth    : ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(r.out.substr(at + 25)) == Approx(sum / 3).epsilon(0.01));
}

TEST_CASE("collective's header states the channels its rows used", "[cli][nccl]") {
  const auto dir = scratch_dir("nccl-channels");
  const auto r = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1K -e 1K --channels 2 --mode analytic", dir);
  REQUIRE(r.code == 0);
  const auto rows = rows_of(r.out);
  REQUIRE(rows.size() == 1);
  const std::string used = rows[0].back();
  CHECK(r.out.find("channels " + used + " (--channels 2 is the least asked") != std::string::npos);
  CHECK(r.out.find("channels asked 2") == std::string::npos);
}

TEST_CASE("collective takes nccl-tests' flags", "[cli][nccl]") {
  const auto dir = scratch_dir("nccl-flags");
  const std::string json = (dir / "c.json").string();
  const auto r = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1K -e 1K -n 5 -w 1 -c 0 -d half -o max -J " +
                                   json + " --mode analytic",
                               dir);
  REQUIRE(r.code == 0);
  const auto rows = rows_of(r.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0][1] == "512"); // 1 KiB of 2-byte elements
  CHECK(rows[0][2] == "half");
  CHECK(rows[0][3] == "max");
  CHECK(r.out.find("warmup iters: 1 iters: 5 validation: 0") != std::string::npos);
  const std::string j = slurp(json);
  CHECK(j.find("\"busbw_gb_per_s\"") != std::string::npos);
  CHECK(j.find("\"avg_busbw_gb_per_s\"") != std::string::npos);
  const auto b =
      run_cli_split("collective --cluster tiny-h100 --gpus 8 --op broadcast -b 1K -e 1K -r 3 --mode analytic", dir);
  REQUIRE(b.code == 0);
  const auto brows = rows_of(b.out);
  REQUIRE(brows.size() == 1);
  CHECK(brows[0][3] == "none");
  CHECK(brows[0][4] == "3");
}

TEST_CASE("collective --set edits the cluster", "[cli][nccl][overrides]") {
  const auto dir = scratch_dir("nccl-set");
  const std::string args = "collective --cluster tiny-h100 --gpus 16 -b 1M -e 1M --mode analytic";
  const auto base = run_cli_split(args, dir);
  const auto slow = run_cli_split(args + " --set server.nic_gbit_per_s=10", dir);
  REQUIRE(base.code == 0);
  REQUIRE(slow.code == 0);
  CHECK(rows_of(base.out)[0][5] != rows_of(slow.out)[0][5]);
  const auto bad = run_cli_split(args + " --set server.nicz=4", dir);
  CHECK(bad.code == 1);
  CHECK(bad.says("--set server.nicz=4"));
}

TEST_CASE("collective's sizes advance at least one byte a step, a factor near 1 included", "[cli][nccl]") {
  const auto dir = scratch_dir("nccl-factor");
  // one size: 1 × 1.0000001 rounds back to 1, which must not loop until the 64-size limit
  const auto one = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1 -e 1 -f 1.0000001 --mode analytic", dir);
  INFO(one.err);
  REQUIRE(one.code == 0);
  const auto rows = rows_of(one.out);
  REQUIRE(rows.size() == 1);
  CHECK(rows[0][0] == "1");
  // 1..8 by a factor of 1.01: every byte size once, in order
  const auto small = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1 -e 8 -f 1.01 --mode analytic", dir);
  REQUIRE(small.code == 0);
  const auto srows = rows_of(small.out);
  REQUIRE(srows.size() == 8);
  for (size_t i = 0; i < srows.size(); ++i) CHECK(srows[i][0] == std::to_string(i + 1));
  // a sweep that really has more than 64 sizes is still refused, naming the options
  const auto many = run_cli_split("collective --cluster tiny-h100 --gpus 8 -b 1 -e 100 -f 1.01 --mode analytic", dir);
  CHECK(many.code == 1);
  CHECK(many.says("more than 64 sizes"));
}
