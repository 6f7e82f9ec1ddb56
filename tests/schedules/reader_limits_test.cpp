// Issue 12: the trace, calibration and input-file readers validate ranges and uniqueness
// and name the event or field that is wrong; sizes from input are bounded.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "schedules/calibration.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/estimate.hpp"
#include "schedules/input_file.hpp"
#include "schedules/limits.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"
#include "tests/scratch.hpp"

using namespace twinscale::schedules;
using Catch::Contains;

namespace {
std::string event(const std::string& pid, const std::string& op, const std::string& dur = "2.0",
                  const std::string& ts = "1.0") {
  return R"({"ph":"X","name":"g","pid":)" + pid + R"(,"tid":0,"ts":)" + ts + R"(,"dur":)" + dur + R"(,"args":{"op":)" +
         op +
         R"(,"kind":"gemm","stream":"compute","iteration":0,"micro_batch":0,"chunk":0,"layer":0,"phase":"fwd","bytes":0,"failed":false}})";
}
std::vector<TraceRecord> read_trace(const std::string& events) {
  std::istringstream in(R"({"format":"twinscale-trace","format_version":1,"source":"cpu","traceEvents":[)" + events +
                        "]}");
  return read_chrome_trace(in, "t.json");
}
} // namespace

TEST_CASE("trace reader: ranges, exact integers and unique events", "[schedules][trace][hardening]") {
  REQUIRE(read_trace(event("1", "5") + "," + event("2", "5")).size() == 2);
  // op = 2^32 + 3 used to become op 3
  CHECK_THROWS_WITH(read_trace(event("0", "4294967299")),
                    Contains("t.json") && Contains("traceEvents[0].args.op") && Contains("4294967299"));
  // a float pid used to be truncated
  CHECK_THROWS_WITH(read_trace(event("1.5", "0")), Contains("traceEvents[0].pid") && Contains("integer"));
  CHECK_THROWS_WITH(read_trace(event("-1", "0")), Contains("traceEvents[0].pid"));
  // duplicate events used to be merged
  CHECK_THROWS_WITH(read_trace(event("1", "5") + "," + event("1", "5")),
                    Contains("traceEvents[1]") && Contains("duplicate") && Contains("traceEvents[0]"));
  // a negative duration used to give 0 % error and negative calibrated seconds
  CHECK_THROWS_WITH(read_trace(event("0", "0", "-3.0")), Contains("traceEvents[0].dur") && Contains("negative"));
  CHECK_THROWS_WITH(read_trace(event("0", "0", "1.0", "-1.0")), Contains("traceEvents[0].ts"));
  // labels are 32-bit: no silent truncation
  std::string big = event("0", "0");
  big.replace(big.find("\"layer\":0"), 9, "\"layer\":4294967296");
  CHECK_THROWS_WITH(read_trace(big), Contains("args.layer") && Contains("out of range"));
  // a number beyond double names the file
  std::istringstream in(R"({"traceEvents":[{"ph":"X","ts":1e400}]})");
  CHECK_THROWS_WITH(read_chrome_trace(in, "t.json"), Contains("t.json") && Contains("not valid JSON"));
}

TEST_CASE("calibration reader: exact integers, unique entries", "[schedules][calibration][hardening]") {
  auto read = [](const std::string& body) {
    std::istringstream in(R"({"format":"twinscale-calibration","version":1,)" + body + "}");
    return read_calibration(in, "cal.json");
  };
  const std::string k = R"({"kernel":"gemm","dtype":"bf16","shape":[1,2,3,0],"seconds":1e-6,"samples":1})";
  CHECK(read("\"kernels\":[" + k + "]").kernels.size() == 1);
  CHECK_THROWS_WITH(read("\"kernels\":[" + k + "," + k + "]"),
                    Contains("kernels[1]") && Contains("duplicates kernels[0]"));
  const std::string c =
      R"({"kind":"all_reduce","group_size":8,"bytes":1e6,"seconds":1e-3,"algbw_bytes_per_s":1e9,"busbw_bytes_per_s":1.75e9,"samples":3})";
  CHECK(read("\"comms\":[" + c + "]").comms.size() == 1);
  CHECK_THROWS_WITH(read("\"comms\":[" + c + "," + c + "]"), Contains("comms[1]") && Contains("duplicates comms[0]"));
  std::string huge = c;
  huge.replace(huge.find("\"samples\":3"), 11, "\"samples\":1e300");
  CHECK_THROWS_WITH(read("\"comms\":[" + huge + "]"), Contains("\"samples\" must be an integer"));
  huge = c;
  huge.replace(huge.find("\"group_size\":8"), 14, "\"group_size\":4294967296");
  CHECK_THROWS_WITH(read("\"comms\":[" + huge + "]"), Contains("group_size") && Contains("out of range"));
}

TEST_CASE("input files: regular files within a size limit", "[schedules][hardening]") {
  CHECK_THROWS_WITH(read_input_file("/dev/zero", "schedule", InputKind::Json),
                    Contains("/dev/zero") && Contains("not a regular file"));
  CHECK_THROWS_WITH(read_input_file("/nonexistent/x.json", "schedule", InputKind::Json),
                    Contains("/nonexistent/x.json") && Contains("cannot open"));
  const auto dir = twinscale::test::scratch_dir("input");
  const auto big = dir / "big.toml";
  {
    std::ofstream out(big, std::ios::binary);
    out << std::string(kMaxTomlBytes + 1, '#');
  }
  CHECK_THROWS_WITH(read_input_file(big.string(), "job file", InputKind::Toml),
                    Contains("big.toml") && Contains("larger than the 4.0 MiB limit"));
  {
    std::ofstream out(big, std::ios::binary);
    out << "name = \"x\"\n";
  }
  CHECK(read_input_file(big.string(), "job file", InputKind::Toml) == "name = \"x\"\n");
  // a JSON document whose DOM would not fit the available memory is refused
  ::setenv("TWINSCALE_MEMORY_BYTES", "100", 1);
  CHECK_THROWS_WITH(read_input_file(big.string(), "schedule", InputKind::Json), Contains("available"));
  ::unsetenv("TWINSCALE_MEMORY_BYTES");
  std::filesystem::remove_all(dir);
}

TEST_CASE("sizes: bounds with reasons, no overflow", "[schedules][hardening]") {
  CHECK_THROWS_WITH(check_layout_sizes(int64_t{1} << 32, int64_t{1} << 32, 1, "layout"),
                    Contains("layout") && Contains("1048576"));
  CHECK_NOTHROW(check_layout_sizes(8, 192, 8, "layout"));
  CHECK(saturating_mul(int64_t{1} << 40, int64_t{1} << 40) == INT64_MAX);
  JobSpec job;
  job.name = "j";
  job.model = {"j", 2, 64, 4, 16, 64, 256};
  job.parallel.global_batch = 2;
  CHECK_NOTHROW(check_job(job));
  JobSpec huge = job;
  huge.model.hidden = int64_t{1} << 40;
  CHECK_THROWS_WITH(check_job(huge), Contains("model.hidden") && Contains("larger than"));
  huge = job;
  huge.parallel.micro_batch = int64_t{1} << 20;
  huge.parallel.global_batch = int64_t{1} << 20;
  huge.model.seq_len = int64_t{1} << 24;
  CHECK_THROWS_WITH(check_job(huge), Contains("micro_batch·model.seq_len"));
  // the op estimate is within 2× above the lowered count (and never below it)
  job.cluster = "tiny-2tier";
  job.parallel.global_batch = 16;
  const Schedule s = lower(job);
  size_t most = 0;
  for (const auto& p : s.programs) most = std::max(most, p.ops.size());
  CHECK(estimate_ops_per_program(job) >= static_cast<double>(most));
  CHECK(estimate_ops_per_program(job) <= 2.5 * static_cast<double>(most));
}
