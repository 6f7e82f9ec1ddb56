// SIGTERM, SIGINT and SIGHUP during `simulate --mode flow`: the signal reaches the forked
// SimGrid process, the command waits for it, removes its temporary files and exits
// 128 + signal saying it was interrupted. No process of the run survives it.
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

/// The pids whose parent is `parent` (a scan of /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string line;
    if (!std::getline(stat, line)) continue;
    const auto close = line.rfind(')'); // "pid (comm) state ppid ..."
    if (close == std::string::npos) continue;
    char state = 0;
    long ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %ld", &state, &ppid) == 2 && ppid == parent)
      out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

bool alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

struct Interrupted {
  int status = -1;
  std::vector<pid_t> children; // the run's children seen before the signal
  std::string err;
  int survivors = 0; // children still running after the command ended
};

/// Starts a flow-mode simulation (GPT-175B on 12,288 GPUs: the fork comes after about a
/// second of lowering and the SimGrid run would take a minute), sends `sig` once its SimGrid child exists, waits.
Interrupted interrupt_flow_run(int sig, const fs::path& dir) {
  const std::string err = (dir / "stderr.txt").string();
  const std::string trace = (dir / "trace.json").string();
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, STDERR_FILENO);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, STDOUT_FILENO);
    ::execl(TWINSCALE_CLI, TWINSCALE_CLI, "simulate", "--preset", "gpt-175b-megascale", "--mode", "flow", "--trace",
            trace.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  Interrupted r;
  for (int i = 0; i < 3000 && r.children.empty(); ++i) { // up to 30 s for the fork
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r.children = children_of(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300)); // let the child get into SimGrid
  ::kill(pid, sig);
  ::waitpid(pid, &r.status, 0);
  r.err = twinscale::test::slurp(err);
  r.survivors = 0;
  for (pid_t c : r.children)
    if (alive(c)) { // an orphan: counted, then ended so that a failing test leaves none behind
      ++r.survivors;
      ::kill(c, SIGKILL);
    }
  return r;
}

} // namespace

TEST_CASE("interrupt: SIGTERM during a flow run stops the SimGrid child, exits 143, leaves no temporary file",
          "[cli][interrupt]") {
  const fs::path dir = twinscale::test::scratch_dir("interrupt-term");
  const Interrupted r = interrupt_flow_run(SIGTERM, dir);
  REQUIRE_FALSE(r.children.empty());
  CHECK(r.survivors == 0);
  REQUIRE(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 143);
  CHECK(r.err.find("interrupted by SIGTERM") != std::string::npos);
  for (const auto& e : fs::directory_iterator(dir))
    CHECK(e.path().filename().string().find(".tmp") == std::string::npos);
  CHECK_FALSE(fs::exists(dir / "trace.json"));
}

TEST_CASE("interrupt: SIGINT during a flow run exits 130 and leaves no orphan", "[cli][interrupt]") {
  const fs::path dir = twinscale::test::scratch_dir("interrupt-int");
  const Interrupted r = interrupt_flow_run(SIGINT, dir);
  REQUIRE_FALSE(r.children.empty());
  CHECK(r.survivors == 0);
  REQUIRE(WIFEXITED(r.status));
  CHECK(WEXITSTATUS(r.status) == 130);
  CHECK(r.err.find("interrupted by SIGINT") != std::string::npos);
}
