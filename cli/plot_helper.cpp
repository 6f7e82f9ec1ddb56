#include "cli/detail/plot_helper.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "schedules/interrupt.hpp"

extern char** environ;

namespace twinscale::cli::detail {

std::filesystem::path find_script(const std::string& name) {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (auto dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path())
      if (std::filesystem::exists(dir / "scripts" / name, ec)) return dir / "scripts" / name;
  // A build tree outside the sources: the source tree it was configured from.
  const auto p = std::filesystem::path(TWINSCALE_SOURCE_DIR) / "scripts" / name;
  return std::filesystem::exists(p, ec) ? p : std::filesystem::path();
}

int run_python(const std::filesystem::path& script, const std::vector<std::string>& args) {
  // Debian's python3-matplotlib lives under /usr/bin/python3; a python3 earlier on PATH
  // (pyenv, venv) may lack it.
  const bool debian = std::filesystem::exists("/usr/bin/python3");
  std::vector<std::string> argv{debian ? "/usr/bin/python3" : "python3", script.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO); // its stdout → our stderr
  posix_spawnattr_t attr; // the helper starts with no signal blocked (we block them around the spawn)
  posix_spawnattr_init(&attr);
  sigset_t none;
  sigemptyset(&none);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
  pid_t pid = 0;
  std::optional<schedules::ChildRegistration> registered; // signals reach the helper too
  int rc = 0;
  {
    const schedules::SignalBlock block; // no signal between the spawn and the registration
    rc = debian ? posix_spawn(&pid, cargv[0], &actions, &attr, cargv.data(), environ)
                : posix_spawnp(&pid, cargv[0], &actions, &attr, cargv.data(), environ);
    if (rc == 0) registered.emplace(pid);
  }
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return -1;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return -1;
  registered.reset();
  schedules::throw_if_interrupted();
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

} // namespace twinscale::cli::detail
