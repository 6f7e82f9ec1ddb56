// The `twinscale simulate` command: JSON keys, byte-identical output for equal inputs,
// usage and input errors.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

namespace {

struct Result {
  int rc = -1;
  std::string out;
};

Result run(const std::string& args) {
  Result r;
  const std::string cmd = std::string(TWINSCALE_CLI) + " " + args + " 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

} // namespace

TEST_CASE("twinscale simulate --json gives the documented keys, deterministically", "[sim][cli]") {
  for (const char* mode : {"analytic", "flow"}) {
    const auto a = run(std::string("simulate --preset tiny-megascale --json --mode ") + mode);
    const auto b = run(std::string("simulate --preset tiny-megascale --json --mode ") + mode);
    REQUIRE(a.rc == 0);
    for (const char* key : {"\"iteration_time_s\"", "\"tokens_per_s\"", "\"mfu\"", "\"breakdown\"", "\"per_stage\""})
      CHECK(a.out.find(key) != std::string::npos);
    CHECK(a.out == b.out);
  }
}

TEST_CASE("twinscale simulate: usage errors exit 2, bad input exits 1", "[sim][cli]") {
  CHECK(run("simulate").rc == 2);                                            // no job
  CHECK(run("simulate --preset tiny-1f1b --mode warp").rc == 2);             // bad mode
  CHECK(run("simulate --preset no-such-job").rc == 1);                       // unknown preset
  CHECK(run("simulate --preset tiny-1f1b --cluster no-such-cluster").rc == 1);
  CHECK(run("simulate --preset tiny-1f1b --trace /tmp/x.json --ranks 5-2").rc == 1);
}
