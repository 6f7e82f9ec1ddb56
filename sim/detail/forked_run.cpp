#include "sim/detail/forked_run.hpp"

#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>

#include "schedules/error.hpp"
#include "schedules/interrupt.hpp"
#include "sim/error.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim::detail {

namespace {

void write_all(int fd, const std::string& data) {
  size_t off = 0;
  while (off < data.size()) {
    const ssize_t n = ::write(fd, data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

[[noreturn]] void child(int fd, const std::function<std::string()>& body, pid_t parent) {
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) std::signal(sig, SIG_DFL);
  // SIGINT/SIGTERM/SIGHUP (forwarded by the parent, or from the terminal) remove this
  // process's temporary files and end it quietly; the parent reports the interruption.
  schedules::reset_interrupts_in_child();
  ::prctl(PR_SET_PDEATHSIG, SIGTERM); // the parent killed outright (SIGKILL): end too, no orphan
  if (::getppid() != parent) ::_exit(128 + SIGTERM);
  sigset_t interrupts; // blocked by the parent around fork()
  sigemptyset(&interrupts);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&interrupts, sig);
  ::pthread_sigmask(SIG_UNBLOCK, &interrupts, nullptr);
  char tag = 'R';
  std::string payload;
  try {
    payload = body();
  } catch (const schedules::ScheduleError& e) {
    tag = 'S';
    payload = e.what();
  } catch (const topology::TopologyError& e) {
    tag = 'T';
    payload = e.what();
  } catch (const std::logic_error& e) {
    tag = 'L';
    payload = e.what();
  } catch (const std::exception& e) {
    tag = 'E';
    payload = e.what();
  }
  write_all(fd, std::string(1, tag) + payload);
  ::close(fd);
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(0); // a forked child must not run the parent's atexit handlers or destructors
}

} // namespace

std::string run_forked(const std::function<std::string()>& body, const std::string& what) {
  const char* no_fork = std::getenv("TWINSCALE_SIM_NO_FORK");
  if (no_fork != nullptr && no_fork[0] == '1') return body();
  int fds[2];
  if (::pipe(fds) != 0) throw SimError(what + ": cannot create a pipe for the SimGrid process");
  std::fflush(stdout);
  std::fflush(stderr);
  const pid_t parent = ::getpid();
  std::optional<schedules::ChildRegistration> registered; // signals reach the child while it runs
  pid_t pid = -1;
  {
    const schedules::SignalBlock block; // no signal between fork() and the registration
    pid = ::fork();
    if (pid == 0) {
      ::close(fds[0]);
      child(fds[1], body, parent); // unblocks the signals once it is set up
    }
    if (pid > 0) registered.emplace(pid);
  }
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw SimError(what + ": cannot fork the SimGrid process");
  }
  ::close(fds[1]);
  std::string data;
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    data.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  registered.reset();
  schedules::throw_if_interrupted(); // the child was stopped: report that, not its missing result
  if (data.empty()) {
    const std::string why = WIFSIGNALED(status) ? "killed by signal " + std::to_string(WTERMSIG(status))
                                                : "exit status " + std::to_string(WEXITSTATUS(status));
    throw SimError(what + ": the SimGrid process ended without a result (" + why + ")");
  }
  std::string payload = data.substr(1);
  switch (data[0]) {
  case 'R': return payload;
  case 'S': throw schedules::ScheduleError(payload);
  case 'T': throw topology::TopologyError(payload);
  case 'L': throw std::logic_error(payload);
  default: throw SimError(payload);
  }
}

} // namespace twinscale::sim::detail
