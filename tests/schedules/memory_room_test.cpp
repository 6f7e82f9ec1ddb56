// The memory a process may use (schedules/input_file.hpp memory_room): the least of free
// memory, the address-space limit (ulimit -v) and the cgroup's memory limit, naming the one
// that binds — so an estimate refuses a run the kernel would kill, not only one larger
// than the machine.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "schedules/input_file.hpp"

using namespace twinscale::schedules;
namespace fs = std::filesystem;

namespace {

fs::path fake_cgroup_root() {
  const fs::path root = fs::temp_directory_path() / ("twinscale-cgroup-" + std::to_string(::getpid()));
  fs::remove_all(root);
  return root;
}

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream(file) << text << "\n";
}

} // namespace

TEST_CASE("memory room: a cgroup v2 limit of the group or a parent binds", "[schedules][memory]") {
  const fs::path root = fake_cgroup_root();
  put(root / "a" / "memory.max", "max");
  put(root / "a" / "b" / "memory.max", "3000000000");
  put(root / "a" / "b" / "memory.current", "1000000000");
  MemoryRoom r = cgroup_memory_room("0::/a/b\n", root.string());
  CHECK(r.bytes == 2e9);
  CHECK(r.source == "cgroup memory.max");
  put(root / "a" / "memory.max", "1500000000"); // the parent's limit is tighter
  put(root / "a" / "memory.current", "1000000000");
  CHECK(cgroup_memory_room("0::/a/b\n", root.string()).bytes == 5e8);
  CHECK(cgroup_memory_room("0::/elsewhere\n", root.string()).bytes < 0); // no limit anywhere
  fs::remove_all(root);
}

TEST_CASE("memory room: a cgroup v1 memory limit binds, v1's 'no limit' figure does not", "[schedules][memory]") {
  const fs::path root = fake_cgroup_root();
  put(root / "memory" / "job" / "memory.limit_in_bytes", "4000000000");
  put(root / "memory" / "job" / "memory.usage_in_bytes", "500000000");
  const MemoryRoom r = cgroup_memory_room("4:memory:/job\n3:cpuset:/\n0::/\n", root.string());
  CHECK(r.bytes == 3.5e9);
  CHECK(r.source == "cgroup memory.limit_in_bytes");
  put(root / "memory" / "job" / "memory.limit_in_bytes", "9223372036854771712");
  put(root / "memory" / "memory.limit_in_bytes", "9223372036854771712");
  CHECK(cgroup_memory_room("4:memory:/job\n", root.string()).bytes < 0);
  fs::remove_all(root);
}

TEST_CASE("memory room: ulimit -v binds when it is the least, and is named", "[schedules][memory]") {
  // in a child, so that this test process keeps its own limit
  const pid_t pid = ::fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    ::unsetenv("TWINSCALE_MEMORY_BYTES");
    double vm_kib = 0;
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("VmSize:", 0) == 0) vm_kib = std::atof(line.c_str() + 7);
    const double room = 512.0 * (1 << 20); // 512 MiB more than this process has
    struct rlimit lim {};
    ::getrlimit(RLIMIT_AS, &lim);
    lim.rlim_cur = static_cast<rlim_t>(vm_kib * 1024 + room);
    if (vm_kib <= 0 || ::setrlimit(RLIMIT_AS, &lim) != 0) ::_exit(2);
    const MemoryRoom r = memory_room();
    const bool limit_binds =
        r.source == "RLIMIT_AS (ulimit -v)" && r.bytes > room - 64.0 * (1 << 20) && r.bytes <= room;
    const bool tighter_one = r.source != "RLIMIT_AS (ulimit -v)" && r.bytes < room; // a smaller machine or cgroup
    ::_exit(limit_binds || tighter_one ? 0 : 1);
  }
  int status = 0;
  REQUIRE(::waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  ::setenv("TWINSCALE_MEMORY_BYTES", "12345", 1);
  CHECK(memory_room().bytes == 12345);
  CHECK(memory_room().source == "TWINSCALE_MEMORY_BYTES");
  ::unsetenv("TWINSCALE_MEMORY_BYTES");
}
