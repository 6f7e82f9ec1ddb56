// Many files of one directory under the output policy, durable at one sync
// (schedules::OutputFileBatch): every file placed whole with its content, files that were
// there replaced, links followed as a single file's policy does; on a failure, without a
// commit and on a signal, no staged file is left and none reaches its final name.
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "schedules/interrupt.hpp"
#include "schedules/output_file.hpp"
#include "tests/cli_runner.hpp"
#include "tests/file_size_limit.hpp"
#include "tests/scratch.hpp"

using namespace twinscale::schedules;
using twinscale::test::slurp;
using twinscale::test::write_text;
namespace fs = std::filesystem;

namespace {

/// The names in `dir`, sorted.
std::vector<std::string> names_in(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

fs::path fresh(const std::string& name) {
  const fs::path dir = twinscale::test::scratch_dir("output-batch") / name;
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

} // namespace

TEST_CASE("output file batch: every file placed whole, an old one replaced, a link's target written",
          "[schedules][output]") {
  const fs::path dir = fresh("place");
  write_text(dir / "f1.json", "old content that is longer than the new one\n");
  write_text(dir / "target.json", "old target\n");
  fs::create_symlink("target.json", dir / "link.json");
  OutputFileBatch batch(dir.string(), "rank state");
  for (int i = 0; i < 300; ++i) batch.add("f" + std::to_string(i) + ".json", "content " + std::to_string(i) + "\n");
  batch.add("link.json", "through the link\n");
  batch.add("empty.json", "");
  CHECK_FALSE(fs::exists(dir / "f0.json")); // staged, not yet placed
  CHECK(slurp(dir / "f1.json") == "old content that is longer than the new one\n");
  batch.commit();
  for (int i = 0; i < 300; ++i) {
    INFO("file " << i);
    CHECK(slurp(dir / ("f" + std::to_string(i) + ".json")) == "content " + std::to_string(i) + "\n");
  }
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(slurp(dir / "target.json") == "through the link\n");
  CHECK(fs::is_regular_file(dir / "empty.json"));
  CHECK(fs::file_size(dir / "empty.json") == 0);
  CHECK(names_in(dir).size() == 303); // 300 files, the link, its target, the empty one: no staging left
  CHECK_THROWS_WITH(batch.add("late.json", "x"), Catch::Contains("added after its batch was committed"));
  CHECK_THROWS_WITH(batch.commit(), Catch::Contains("committed twice"));
}

TEST_CASE("output file batch: a directory in the way or a name with a slash is refused, nothing left staged",
          "[schedules][output]") {
  const fs::path dir = fresh("refuse");
  fs::create_directories(dir / "busy.json");
  {
    OutputFileBatch batch(dir.string(), "output");
    batch.add("a.json", "a\n");
    CHECK_THROWS_WITH(batch.add("busy.json", "b\n"),
                      Catch::Contains((dir / "busy.json").string()) && Catch::Contains("a directory"));
    CHECK_THROWS_WITH(batch.add("sub/c.json", "c\n"), Catch::Contains("not a plain file name"));
    CHECK_THROWS_WITH(batch.add("..", "c\n"), Catch::Contains("not a plain file name"));
  } // ends without commit: the staged file is removed with its staging directory
  CHECK(names_in(dir) == std::vector<std::string>{"busy.json"});
}

TEST_CASE("output file batch: a full disk names the file and the cause, and leaves no file", "[schedules][output]") {
  const fs::path dir = fresh("full");
  write_text(dir / "kept.json", "kept\n");
  {
    OutputFileBatch batch(dir.string(), "output");
    batch.add("small.json", "small\n");
    const twinscale::test::FileSizeLimit limit(1000);
    CHECK_THROWS_WITH(batch.add("big.json", std::string(5000, 'x')),
                      Catch::Contains((dir / "big.json").string() + ": cannot write output (write): disk full"));
    CHECK(names_in(dir) == std::vector<std::string>{"kept.json"}); // the staging directory went with the failure
  }
  CHECK(names_in(dir) == std::vector<std::string>{"kept.json"});
  CHECK(slurp(dir / "kept.json") == "kept\n");
}

TEST_CASE("output file batch: a signal before the commit removes the staged files and their directory",
          "[schedules][output][interrupt]") {
  const fs::path dir = fresh("signal");
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) { // the child stages 2,000 files, then is ended by SIGTERM through the handler
    install_interrupt_handlers();
    OutputFileBatch batch(dir.string(), "output");
    for (int i = 0; i < 2000; ++i) batch.add("r" + std::to_string(i) + ".json", std::string(100, 'r'));
    ::raise(SIGTERM);
    ::_exit(0); // not reached: the handler ends the process
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 128 + SIGTERM);
  CHECK(names_in(dir).empty());
}
