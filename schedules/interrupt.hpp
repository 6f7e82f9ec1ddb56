// Interruption of a command by SIGINT, SIGTERM or SIGHUP. Once install_interrupt_handlers()
// has run (the command-line front end does it first), a signal:
//  - while child processes are registered (the forked SimGrid process, a plotting
//    helper), is forwarded to each of them and recorded; the code waiting for them then
//    calls throw_if_interrupted(), so the command unwinds, removes what it started and
//    exits 128 + signal saying it was interrupted;
//  - otherwise removes every registered temporary file, says so on stderr and ends the
//    process with status 128 + signal (130 for SIGINT, 143 for SIGTERM).
// Everything the handler touches is async-signal-safe (fixed slots, kill, unlink, write,
// and for a staging directory open, getdents64, unlinkat, rmdir).
#pragma once

#include <sys/types.h>

#include <string>

#include "common/error.hpp"

namespace twinscale::schedules {

/// The command was interrupted by `signal()`; the front end exits 128 + signal.
class InterruptedError : public Error {
public:
  explicit InterruptedError(int signal);
  int signal() const { return signal_; }

private:
  int signal_;
};

/// Installs the handlers for SIGINT, SIGTERM and SIGHUP (idempotent), and ignores SIGXFSZ
/// so that a write past a file-size limit fails (EFBIG) and is reported like a full disk.
void install_interrupt_handlers();
/// The signal received so far, 0 if none.
int interrupt_signal();
/// Throws InterruptedError if a signal was received.
void throw_if_interrupted();
/// "SIGTERM", "SIGINT", "SIGHUP" or "signal N".
std::string signal_name(int signal);

/// Blocks the three signals while alive (around fork(), so a signal cannot fall between
/// the fork and the child's registration).
class SignalBlock {
public:
  SignalBlock();
  ~SignalBlock();
  SignalBlock(const SignalBlock&) = delete;
  SignalBlock& operator=(const SignalBlock&) = delete;

private:
  unsigned long saved_[16];
};

/// While alive, signals are forwarded to `pid`. Throws std::logic_error when every slot
/// is taken.
class ChildRegistration {
public:
  explicit ChildRegistration(pid_t pid);
  ~ChildRegistration();
  ChildRegistration(const ChildRegistration&) = delete;
  ChildRegistration& operator=(const ChildRegistration&) = delete;

private:
  int slot_;
};

/// While alive, `path` is removed if a signal ends the process (the temporary file of an
/// output being written; with `directory`, a staging directory of this process, removed
/// with every file in it). A path longer than the slot is not registered.
class TempFileRegistration {
public:
  explicit TempFileRegistration(const std::string& path, bool directory = false);
  ~TempFileRegistration();
  TempFileRegistration(const TempFileRegistration&) = delete;
  TempFileRegistration& operator=(const TempFileRegistration&) = delete;

private:
  int slot_;
};

/// In a freshly forked child: forget the parent's children and temporary files (they are
/// the parent's to clean), and end quietly on a signal (the parent reports it).
void reset_interrupts_in_child();

} // namespace twinscale::schedules
