// A lowered file-size limit in a test process: writes past it fail with EFBIG (SIGXFSZ
// ignored), which the output policy reports as a full disk.
#pragma once

#include <sys/resource.h>

#include <csignal>

namespace twinscale::test {

/// Lowers RLIMIT_FSIZE (writes past it fail with EFBIG, SIGXFSZ ignored) while alive.
class FileSizeLimit {
public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit lowered = saved_;
    lowered.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lowered);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
  rlimit saved_{};
  void (*old_handler_)(int) = SIG_DFL;
};

} // namespace twinscale::test
