#include "schedules/interrupt.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <stdexcept>

namespace twinscale::schedules {

namespace {

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
constexpr int kChildSlots = 16;
constexpr int kTempSlots = 32;
constexpr size_t kPathBytes = 4096;

volatile sig_atomic_t g_signal = 0;
volatile sig_atomic_t g_quiet = 0;
std::atomic<pid_t> g_children[kChildSlots];
std::atomic<int> g_temp_state[kTempSlots]; // 0 free, 1 being filled, 2 armed (a file), 3 armed (a directory)
char g_temp_paths[kTempSlots][kPathBytes];

void say(const char* text) {
  const ssize_t n = ::write(STDERR_FILENO, text, std::strlen(text));
  (void)n;
}

/// Removes every entry of directory `path` (a staging directory: plain files only), then
/// the directory. Async-signal-safe: system calls on a buffer of the stack. Reads the
/// directory again from its start until a pass removes nothing, as removing entries while
/// reading may move others past the position read.
void remove_staging_dir(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    alignas(struct dirent64) char buf[4096];
    for (bool removed = true; removed;) {
      removed = false;
      ::lseek(fd, 0, SEEK_SET);
      for (ssize_t n; (n = ::getdents64(fd, buf, sizeof buf)) > 0;)
        for (ssize_t off = 0; off < n;) {
          const auto* d = reinterpret_cast<const struct dirent64*>(buf + off);
          off += d->d_reclen;
          const char* name = d->d_name;
          if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
          if (::unlinkat(fd, name, 0) == 0) removed = true;
        }
    }
    ::close(fd);
  }
  ::rmdir(path);
}

void on_signal(int sig) {
  g_signal = sig;
  bool forwarded = false;
  for (auto& c : g_children) {
    const pid_t pid = c.load();
    if (pid > 0) {
      ::kill(pid, sig);
      forwarded = true;
    }
  }
  if (forwarded) return; // the code waiting for them unwinds and reports
  for (int i = 0; i < kTempSlots; ++i) {
    const int state = g_temp_state[i].load();
    if (state == 2) ::unlink(g_temp_paths[i]);
    if (state == 3) remove_staging_dir(g_temp_paths[i]);
  }
  if (!g_quiet) {
    say("twinscale: interrupted by ");
    say(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal");
    say("; temporary files removed, no output written under its final name\n");
  }
  ::_exit(128 + sig);
}

} // namespace

InterruptedError::InterruptedError(int signal)
    : Error("interrupted by " + signal_name(signal) + "; the run was stopped and its temporary files removed"),
      signal_(signal) {}

std::string signal_name(int signal) {
  switch (signal) {
  case SIGINT: return "SIGINT";
  case SIGTERM: return "SIGTERM";
  case SIGHUP: return "SIGHUP";
  default: return "signal " + std::to_string(signal);
  }
}

void install_interrupt_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int s : kSignals) sigaddset(&sa.sa_mask, s); // one handler at a time
  // no SA_RESTART: a waiting read returns EINTR. SA_ONSTACK: on the alternate stack where
  // one is set (SimGrid sets one in the flow mode's child, whose actors' stacks are small)
  sa.sa_flags = SA_ONSTACK;
  for (int s : kSignals) ::sigaction(s, &sa, nullptr);
  // past a file-size limit (RLIMIT_FSIZE) a write fails with EFBIG, which the output
  // policy reports and cleans up, instead of the process dying with a partial temp file
  ::signal(SIGXFSZ, SIG_IGN);
}

int interrupt_signal() { return g_signal; }

void throw_if_interrupted() {
  if (const int s = g_signal; s != 0) throw InterruptedError(s);
}

SignalBlock::SignalBlock() {
  static_assert(sizeof(saved_) >= sizeof(sigset_t));
  sigset_t block;
  sigemptyset(&block);
  for (int s : kSignals) sigaddset(&block, s);
  ::pthread_sigmask(SIG_BLOCK, &block, reinterpret_cast<sigset_t*>(saved_));
}

SignalBlock::~SignalBlock() { ::pthread_sigmask(SIG_SETMASK, reinterpret_cast<sigset_t*>(saved_), nullptr); }

ChildRegistration::ChildRegistration(pid_t pid) : slot_(-1) {
  for (int i = 0; i < kChildSlots; ++i) {
    pid_t free = 0;
    if (g_children[i].compare_exchange_strong(free, pid)) {
      slot_ = i;
      return;
    }
  }
  throw std::logic_error("ChildRegistration: more than 16 child processes at once");
}

ChildRegistration::~ChildRegistration() { g_children[slot_].store(0); }

TempFileRegistration::TempFileRegistration(const std::string& path, bool directory) : slot_(-1) {
  if (path.size() >= kPathBytes) return;
  for (int i = 0; i < kTempSlots; ++i) {
    int free = 0;
    if (g_temp_state[i].compare_exchange_strong(free, 1)) {
      // the path is written before the slot is visible to the handler
      std::memcpy(g_temp_paths[i], path.c_str(), path.size() + 1);
      g_temp_state[i].store(directory ? 3 : 2);
      slot_ = i;
      return;
    }
  }
}

TempFileRegistration::~TempFileRegistration() {
  if (slot_ >= 0) g_temp_state[slot_].store(0);
}

void reset_interrupts_in_child() {
  for (auto& c : g_children) c.store(0);
  for (auto& t : g_temp_state) t.store(0);
  g_quiet = 1;
}

} // namespace twinscale::schedules
