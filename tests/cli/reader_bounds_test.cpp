// Inputs that used to crash: a TOML document nested 50,000 levels deep (toml++ recursed
// until the stack overflowed), a schedule whose GEMM shape products wrap int64 (the CPU
// device indexed a buffer of 0 elements), and messages larger than any device's memory
// (bad_alloc, exit 3). Each is refused with exit 1 and a message naming the file or op.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using twinscale::test::CliOutput;
using twinscale::test::slurp;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("reader-bounds"); }

CliOutput run(const std::string& args) { return twinscale::test::run_cli_split(args, scratch()); }

/// tiny-1f1b's schedule, exported once per test process.
std::string tiny_schedule() {
  static std::string text;
  if (text.empty()) {
    const fs::path file = scratch() / "tiny.json";
    REQUIRE(run("schedule export --preset tiny-1f1b --out " + file.string()).code == 0);
    text = slurp(file);
  }
  return text;
}

/// `text` with every `from` replaced by `to` (REQUIREs at least one).
std::string replaced_all(std::string text, const std::string& from, const std::string& to) {
  size_t n = 0;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()), ++n)
    text.replace(at, from.size(), to);
  REQUIRE(n > 0);
  return text;
}

std::string dotted(int segments) {
  std::string key = "a";
  for (int i = 1; i < segments; ++i) key += ".a";
  return key;
}

} // namespace

TEST_CASE("reader bounds: a 50,000-level dotted TOML header or key is refused by every TOML reader",
          "[cli][reader-bounds]") {
  const fs::path header = scratch() / "deep-header.toml", key = scratch() / "deep-key.toml";
  write_text(header, "[" + dotted(50000) + "]\nx = 1\n");
  write_text(key, "name = \"t\"\n" + dotted(50000) + " = 1\n");
  for (const std::string& args :
       {"simulate " + header.string() + " --mode analytic", "simulate " + key.string() + " --mode analytic",
        "topology show " + header.string(), "sweep " + key.string() + " --db " + (scratch() / "x.db").string(),
        "campaign --preset tiny-1f1b --faults " + header.string()}) {
    INFO(args);
    const CliOutput r = run(args);
    CHECK(r.code == 1);
    CHECK(r.says("TOML nesting of"));
    CHECK(r.says("limit of 64"));
  }
}

TEST_CASE("reader bounds: a schedule with a GEMM dimension of 2^62 is refused by validate and run",
          "[cli][reader-bounds]") {
  const fs::path f = scratch() / "huge-gemm.json";
  write_text(f,
             replaced_all(tiny_schedule(), "\"shape\":[128,384,256,0]", "\"shape\":[4611686018427387904,384,256,0]"));
  for (const std::string& args : {"schedule validate " + f.string(), "run --schedule " + f.string()}) {
    INFO(args);
    const CliOutput r = run(args);
    CHECK(r.code == 1);
    CHECK(r.says(f.string()));
    CHECK(r.says("shape[0]"));
    CHECK(r.says("2^31"));
  }
}

TEST_CASE("reader bounds: a message of 10^12 bytes is refused against the GPU's and the CPU device's memory",
          "[cli][reader-bounds]") {
  const fs::path f = scratch() / "huge-message.json";
  write_text(f, replaced_all(tiny_schedule(), "{\"bytes\":262144.0,", "{\"bytes\":1e12,"));
  CliOutput r = run("schedule validate " + f.string());
  CHECK(r.code == 1);
  CHECK(r.out.find("a message of") != std::string::npos);
  CHECK(r.out.find("of GPU memory") != std::string::npos);
  r = run("run --schedule " + f.string());
  CHECK(r.code == 1);
  CHECK(r.says("needs a buffer of 1000000.000000 MB on the CPU device"));
  CHECK(r.says("--shape-divisor"));
}

TEST_CASE("reader bounds: an optimizer step over 2^35 parameters is a vector, not refused as a GEMM dimension",
          "[cli][reader-bounds]") {
  // GPT-175B at tp 8, pp 8 updates 2.7·10^9 parameters per rank: past 2^31, within 2^40
  const fs::path f = scratch() / "long-vector.json";
  write_text(f, replaced_all(tiny_schedule(), "\"shape\":[477568,0,0,0]", "\"shape\":[34359738368,0,0,0]"));
  const CliOutput r = run("schedule validate " + f.string() + " --gpu-memory-gb 1000000");
  CHECK(r.code == 0);
  CHECK(r.out.find("valid") != std::string::npos);
}
