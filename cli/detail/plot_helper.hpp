// The plotting helpers (scripts/plot_*.py) of `campaign`, `tune-checkpoint` and
// `sweep show --plot`: found next to the executable's tree, run with an argument vector
// through posix_spawn — never a shell, so no path or name given by a user is parsed as
// a command.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace twinscale::cli::detail {

/// The exit status of a plotting script that could not write a PNG (a full disk): it has
/// removed its temporary file and named the cause; the command fails with it.
inline constexpr int kPlotWriteFailed = 4;

/// scripts/NAME in the tree above the executable, else in the source tree it was
/// configured from; empty when absent.
std::filesystem::path find_script(const std::string& name);

/// Runs `script` with Debian's /usr/bin/python3 (python3 on PATH if absent) and `args`,
/// the child's stdout sent to our stderr. Returns its exit status; -1 if it could not be
/// started or ended by a signal.
int run_python(const std::filesystem::path& script, const std::vector<std::string>& args);

} // namespace twinscale::cli::detail
