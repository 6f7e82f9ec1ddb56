// The start barrier's watch on the run directory (backend/detail/peer_watch.hpp): the
// abort flag stops the wait; a dead rank of this host stops it and raises the flag; a
// live one, a dead one of another host, or a state file it cannot read, does not.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/detail/peer_watch.hpp"
#include "tests/scratch.hpp"

using namespace twinscale::backend;

namespace {

namespace fs = std::filesystem;

fs::path fresh(const std::string& name) { return twinscale::test::empty_scratch_dir("peer-watch-" + name); }

void started(const fs::path& dir, int rank, pid_t pid, const std::string& host) {
  std::ofstream(dir / ("rank-" + std::to_string(rank) + ".started"))
      << "{\"rank\": " << rank << ", \"pid\": " << pid << ", \"host\": \"" << host << "\"}\n";
}

/// The pid of a process that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

} // namespace

TEST_CASE("start barrier watch: a dead rank of this host stops the wait and raises the abort flag", "[backend]") {
  const fs::path dir = fresh("dead");
  started(dir, 0, ::getpid(), "h");
  started(dir, 1, dead_pid(), "h");
  const auto stop = detail::start_barrier_abort(dir.string(), 0, "h", 0.0);
  CHECK(stop());
  REQUIRE(fs::exists(dir / "abort"));
  std::ifstream in(dir / "abort");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_THAT(text, Catch::Contains("\"rank\": 1") && Catch::Contains("died before the start"));
  fs::remove_all(dir);
}

TEST_CASE("start barrier watch: live ranks and dead ranks of other hosts do not stop it, the flag does", "[backend]") {
  const fs::path dir = fresh("live");
  started(dir, 0, ::getpid(), "h");
  started(dir, 1, ::getppid(), "h");    // alive
  started(dir, 2, dead_pid(), "other"); // dead, but its host is not this one: cannot be checked
  std::ofstream(dir / "rank-3.started") << "not json\n";
  // well-formed JSON with fields of another type or out of range: skipped, not thrown on
  std::ofstream(dir / "rank-4.started") << "{\"rank\": \"four\", \"pid\": \"x\", \"host\": \"h\"}\n";
  std::ofstream(dir / "rank-5.started") << "{\"rank\": 5, \"pid\": 99999999999, \"host\": \"h\"}\n";
  std::ofstream(dir / "rank-6.started") << "{\"rank\": 6, \"pid\": 1.5, \"host\": 7}\n";
  const auto stop = detail::start_barrier_abort(dir.string(), 0, "h", 0.0);
  CHECK_FALSE(stop());
  CHECK_FALSE(fs::exists(dir / "abort"));
  std::ofstream(dir / "abort") << "{\"rank\": 2, \"status\": \"timed out\"}\n"; // a peer gave up
  CHECK(stop());
  fs::remove_all(dir);
}
