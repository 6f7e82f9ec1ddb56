// Helpers for tests that start real processes: a shell command with a time limit,
// a background job, an mpirun command line that survives one dead rank, temp dirs.
#pragma once

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/scratch.hpp"

namespace twinscale::backend::test {

struct ShellResult {
  int status = -1;    // exit status of the command (124: killed by its time limit)
  std::string output; // stdout and stderr
};

inline ShellResult shell(const std::string& command, int limit_s) {
  ShellResult r;
  const std::string cmd = "timeout -k 5 " + std::to_string(limit_s) + " " + command + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) r.output.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

struct Job {
  FILE* pipe = nullptr;
};

inline Job spawn(const std::string& command, int limit_s) {
  return Job{::popen(("timeout -k 5 " + std::to_string(limit_s) + " " + command + " 2>&1").c_str(), "r")};
}

inline ShellResult finish(Job& job) {
  ShellResult r;
  if (!job.pipe) return r;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), job.pipe)) r.output.append(buf.data(), n);
  const int st = ::pclose(job.pipe);
  job.pipe = nullptr;
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

inline bool have_mpirun() { return std::system("command -v mpirun > /dev/null 2>&1") == 0; }

/// OpenMPI 4.1 command line. `survive_death`: --enable-recovery keeps mpirun from
/// killing the survivors when one rank dies, so that they can time out and report
/// (docs/backend.md); mpirun's own exit status is then 0 whatever the ranks return.
inline std::string mpirun(int ranks, bool survive_death = false) {
  return std::string("mpirun --oversubscribe --allow-run-as-root ") + (survive_death ? "--enable-recovery " : "") +
         "-np " + std::to_string(ranks);
}

inline std::string fresh_dir(const std::string& name) {
  return twinscale::test::empty_scratch_dir("test-" + name).string();
}

} // namespace twinscale::backend::test
