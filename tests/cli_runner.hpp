// Runs the built `twinscale` binary (path in TWINSCALE_CLI) as a process, for tests of
// exit codes and output.
#pragma once

#include <cstdio>
#include <string>
#include <sys/wait.h>

namespace twinscale::test {

struct CliResult {
  int rc = -1;     // exit status; -1 if the process did not exit normally
  std::string out; // stdout (and stderr with Capture::StdoutAndStderr)
};

enum class Capture { StdoutOnly, StdoutAndStderr };

inline CliResult run_cli(const std::string& args, Capture capture) {
  const std::string cmd =
      std::string(TWINSCALE_CLI) + " " + args + (capture == Capture::StdoutOnly ? " 2>/dev/null" : " 2>&1");
  CliResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

} // namespace twinscale::test
