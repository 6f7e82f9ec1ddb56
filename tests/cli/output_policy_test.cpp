// The one output policy (schedules/output_file.hpp) end to end: an output that is an
// input of the same command, or another of its outputs, is refused before any work and
// the input is left as it was; a character device is written in place, never replaced by
// a regular file; a full disk is named ("disk full"), the command exits non-zero and no
// temporary file is left; a FIFO with no reader is refused instead of hanging.
#include <catch2/catch.hpp>

#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/cli_runner.hpp"
#include "tests/skip.hpp"

namespace fs = std::filesystem;

namespace {

using twinscale::test::CliOutput;
using twinscale::test::slurp;
using twinscale::test::write_text;

fs::path scratch() { return twinscale::test::scratch_dir("output-policy"); }

CliOutput run(const std::string& args) { return twinscale::test::run_cli_split(args, scratch()); }

/// A file with known content, to check that a refused command left it untouched.
std::string precious(const std::string& name) {
  const fs::path p = scratch() / name;
  write_text(p, "precious input\n");
  return p.string();
}

bool temp_files_left(const fs::path& dir) {
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".tmp") != std::string::npos) return true;
  return false;
}

/// A private character device (major, minor) in the scratch folder, or "" when this
/// process may not make one (not root). Tests use these instead of /dev/null and
/// /dev/full so that a failure can never replace the machine's own device nodes.
std::string char_device(const std::string& name, unsigned major_id, unsigned minor_id) {
  const fs::path p = scratch() / name;
  fs::remove(p);
  if (::mknod(p.c_str(), S_IFCHR | 0666, makedev(major_id, minor_id)) != 0) return "";
  return p.string();
}

bool is_char_device(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

/// Runs the CLI with every file it writes limited to `bytes` (a write past it fails with
/// EFBIG, which the writer reports as a full disk). Its messages go through a pipe to a
/// process without the limit, so that the limit cannot cut them.
CliOutput run_file_size_limited(const std::string& args, long bytes) {
  const fs::path log = scratch() / "limited.txt";
  const std::string cmd = "{ prlimit --fsize=" + std::to_string(bytes) + " " + TWINSCALE_CLI + " " + args +
                          " 2>&1; echo \"exit $?\"; } | cat > " + log.string();
  CliOutput r;
  if (std::system(cmd.c_str()) != 0) return r;
  r.err = slurp(log);
  const auto at = r.err.rfind("exit ");
  if (at != std::string::npos) r.code = std::stoi(r.err.substr(at + 5));
  return r;
}

} // namespace

TEST_CASE("output policy: an output that is an input of the same command is refused, the input kept",
          "[cli][output-policy]") {
  struct Case {
    std::string args;
    std::string input;
  };
  const std::string b = precious("b.json"), d = precious("d.db"), c = precious("c.csv"), t = precious("t.tstrace");
  const Case cases[] = {
      {"calibrate " + b + " --preset tiny-1f1b --out " + b, b},
      {"sweep show " + d + " --csv " + d, d},
      {"report " + c + " -o " + c, c},
      {"trace convert " + t + " " + t, t},
  };
  for (const Case& k : cases) {
    INFO(k.args);
    const CliOutput r = run(k.args);
    CHECK(r.code == 1);
    CHECK(r.says("the same file as the input"));
    CHECK(slurp(k.input) == "precious input\n");
  }
}

TEST_CASE("output policy: two outputs of one command naming the same file are refused before the run",
          "[cli][output-policy]") {
  const std::string f = (scratch() / "f.csv").string();
  fs::remove(f);
  CliOutput r = run("simulate --preset tiny-1f1b --mode analytic --per-rank-csv " + f + " --link-csv " + f);
  CHECK(r.code == 1);
  CHECK(r.says("--link-csv " + f + ": the same file as --per-rank-csv"));
  CHECK_FALSE(fs::exists(f));
  r = run("probe --preset tiny-1f1b --out " + f + " --cluster-out " + f);
  CHECK(r.code == 1);
  CHECK(r.says("--cluster-out " + f + ": the same file as --out"));
  CHECK_FALSE(fs::exists(f));
}

TEST_CASE("output policy: a character device given as an output is written in place, not replaced",
          "[cli][output-policy]") {
  const std::string null = char_device("null", 1, 3);
  if (null.empty()) TWINSCALE_SKIP("cannot make a character device here (needs root)");
  const CliOutput r = run("schedule export --preset tiny-1f1b --out " + null);
  CHECK(r.code == 0);
  CHECK(is_char_device(null));
  CHECK_FALSE(temp_files_left(scratch()));
}

TEST_CASE("output policy: a full disk is named, exits non-zero and leaves no temporary file", "[cli][output-policy]") {
  std::string full = char_device("full", 1, 7);
  if (full.empty()) {
    if (::geteuid() == 0) TWINSCALE_SKIP("cannot make a character device as root here");
    full = "/dev/full"; // not root: the node cannot be replaced whatever happens
  }
  const CliOutput r = run("schedule export --preset tiny-1f1b --out " + full);
  CHECK(r.code == 1);
  CHECK(r.says(full));
  CHECK(r.says("disk full"));
  CHECK(is_char_device(full));
  CHECK_FALSE(temp_files_left(scratch()));
}

TEST_CASE("output policy: a FIFO with no reader is refused at once, a directory is not replaced",
          "[cli][output-policy]") {
  const fs::path fifo = scratch() / "fifo";
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  CliOutput r = run("schedule export --preset tiny-1f1b --out " + fifo.string());
  CHECK(r.code == 1);
  CHECK(r.says("a FIFO with no reader"));
  const fs::path dir = scratch() / "a-dir";
  fs::create_directories(dir);
  r = run("schedule export --preset tiny-1f1b --out " + dir.string());
  CHECK(r.code == 1);
  CHECK(r.says("a directory"));
  CHECK(fs::is_directory(dir));
}

TEST_CASE("output policy: plots that cannot be written fail the command, leaving no partial or temporary PNG",
          "[cli][output-policy]") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0)
    TWINSCALE_SKIP("python3-matplotlib is not installed");
  const fs::path dir = scratch() / "campaign-plots";
  fs::remove_all(dir);
  // files past 24 KiB fail with EFBIG (SIGXFSZ is ignored): the JSON and CSVs fit, a PNG does not
  if (std::system("prlimit --version >/dev/null 2>&1") != 0) TWINSCALE_SKIP("prlimit (util-linux) is not installed");
  const CliOutput r = twinscale::test::run_cli_split("campaign --preset tiny-1f1b --out " + dir.string(), scratch(),
                                                     "prlimit --fsize=24576 ");
  CHECK(r.code == 1);
  CHECK(r.says("campaign_states.png: disk full"));
  CHECK(fs::file_size(dir / "campaign.json") > 0);
  CHECK(r.says("cannot write the plots"));
  REQUIRE(fs::is_directory(dir));
  for (const auto& e : fs::directory_iterator(dir)) {
    INFO(e.path());
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
    CHECK(e.path().extension() != ".png");
  }
}

TEST_CASE("output policy: import-chakra into its own ET set and --trace shared with a CSV are refused",
          "[cli][output-policy]") {
  const fs::path dir = scratch() / "et";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string prefix = (dir / "t").string();
  REQUIRE(run("schedule export --preset tiny-1f1b --format chakra --out " + prefix).code == 0);
  const std::string first = slurp(prefix + ".0.et");
  REQUIRE_FALSE(first.empty());
  CliOutput r = run("schedule import-chakra " + prefix + " --out " + prefix + ".0.et");
  CHECK(r.code == 1);
  CHECK(r.says("--out " + prefix + ".0.et: the same file as the input"));
  CHECK(slurp(prefix + ".0.et") == first);

  const std::string f = (scratch() / "shared.out").string();
  fs::remove(f);
  for (const char* csv : {"--per-rank-csv", "--link-csv"}) {
    INFO(csv);
    r = run("simulate --preset tiny-1f1b --mode analytic " + std::string(csv) + " " + f + " --trace " + f);
    CHECK(r.code == 1);
    CHECK(r.says(std::string(csv) + " " + f + ": the same file as --trace " + f));
    CHECK_FALSE(fs::exists(f));
  }
}

TEST_CASE("output policy: a full disk under topology show --dot and simulate --run-dir leaves no temporary file",
          "[cli][output-policy]") {
  if (std::system("prlimit --version >/dev/null 2>&1") != 0) TWINSCALE_SKIP("prlimit (util-linux) is not installed");
  const fs::path dir = scratch() / "full-disk";
  fs::remove_all(dir);
  fs::create_directories(dir);
  // files past the limit fail with EFBIG, which the writer reports as a full disk
  const std::string dot = (dir / "t.dot").string();
  CliOutput r = run_file_size_limited("topology show tiny-2tier --dot " + dot, 2000);
  CHECK(r.code == 1);
  CHECK(r.says(dot + ": cannot write --dot graph"));
  CHECK(r.says("disk full"));
  CHECK_FALSE(fs::exists(dot));
  CHECK_FALSE(temp_files_left(dir));

  const fs::path run_dir = dir / "run";
  r = run_file_size_limited(
      "simulate --preset tiny-1f1b --mode analytic --every-rank --hang-rank 3 --run-dir " + run_dir.string(), 300);
  CHECK(r.code == 1);
  CHECK(r.says("rank-0.json: cannot write output (write): disk full"));
  if (fs::exists(run_dir)) CHECK_FALSE(temp_files_left(run_dir));
}

TEST_CASE("output policy: sweep show --plot on a full disk fails, leaving no partial PNG", "[cli][output-policy]") {
  if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") != 0)
    TWINSCALE_SKIP("python3-matplotlib is not installed");
  if (std::system("prlimit --version >/dev/null 2>&1") != 0) TWINSCALE_SKIP("prlimit (util-linux) is not installed");
  const fs::path dir = scratch() / "sweep-plots";
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_text(dir / "s.toml", "name = \"s\"\n[base]\njob = \"tiny-1f1b\"\n[axes]\ntp = [1, 2]\n");
  const std::string db = (dir / "s.db").string();
  REQUIRE(run("sweep " + (dir / "s.toml").string() + " --db " + db).code == 0);
  // 32 KiB: the store's shared-memory index fits, the Pareto plot (about 37 KB) does not
  const fs::path plots = dir / "p";
  const CliOutput r = run_file_size_limited("sweep show " + db + " --plot " + plots.string(), 32768);
  CHECK(r.code == 1);
  CHECK(r.says("disk full"));
  CHECK(r.says("cannot write the plots"));
  REQUIRE(fs::is_directory(plots));
  for (const auto& e : fs::directory_iterator(plots)) {
    INFO(e.path());
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
    CHECK(e.path().extension() != ".png");
  }
}

TEST_CASE("output policy: campaign and tune-checkpoint --out folders with quotes are paths, not shell text",
          "[cli][output-policy]") {
  const fs::path dir = scratch() / "quoted";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string pwned = (dir / "PWNED").string();
  struct Case {
    std::string command, folder, file;
  };
  const Case cases[] = {
      {"campaign", (dir / ("c';touch " + pwned + ";'")).string(), "campaign.json"},
      {"tune-checkpoint", (dir / "O'Brien t").string(), "tune_checkpoint.json"},
  };
  for (const Case& k : cases) {
    INFO(k.command);
    const CliOutput r = run(k.command + " --preset tiny-1f1b --seeds 2 --quiet --out \"" + k.folder + "\"");
    CHECK(r.code == 0);
    CHECK(fs::exists(fs::path(k.folder) / k.file));
    CHECK_FALSE(fs::exists(pwned));
    if (std::system("/usr/bin/python3 -c 'import matplotlib' 2>/dev/null") == 0) {
      bool png = false; // the plot helper got the quoted folder as one argument
      for (const auto& e : fs::directory_iterator(k.folder)) png = png || e.path().extension() == ".png";
      CHECK(png);
    }
  }
}
