// Runs the built `twinscale` binary (path in TWINSCALE_CLI) as a process, for tests of
// exit codes and output.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/scratch.hpp"

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

/// A CLI run with stdout and stderr kept apart.
struct CliOutput {
  int code = -1; // exit status; -1 if the process did not exit normally
  std::string out;
  std::string err;
  bool says(const std::string& s) const { return err.find(s) != std::string::npos; }
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_text(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
}

/// Runs `env TWINSCALE_CLI args` (env: "VAR=value " prefixes, may be empty), its stdout and
/// stderr through files in `scratch`.
inline CliOutput run_cli_split(const std::string& args, const std::filesystem::path& scratch,
                               const std::string& env = "") {
  const auto out = scratch / "stdout.txt";
  const auto err = scratch / "stderr.txt";
  const std::string cmd = env + std::string(TWINSCALE_CLI) + " " + args + " >" + out.string() + " 2>" + err.string();
  const int status = std::system(cmd.c_str());
  CliOutput r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

} // namespace twinscale::test
