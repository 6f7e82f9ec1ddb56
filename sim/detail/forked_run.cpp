#include "sim/detail/forked_run.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "schedules/error.hpp"
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

[[noreturn]] void child(int fd, const std::function<std::string()>& body) {
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL, SIGTERM, SIGINT}) std::signal(sig, SIG_DFL);
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
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw SimError(what + ": cannot fork the SimGrid process");
  }
  if (pid == 0) {
    ::close(fds[0]);
    child(fds[1], body);
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
