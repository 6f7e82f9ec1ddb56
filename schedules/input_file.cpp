#include "schedules/input_file.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace twinscale::schedules {

namespace {
std::string mib(double bytes) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1f MiB", bytes / 1048576.0);
  return buf;
}

/// Closes a descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};
} // namespace

double available_memory_bytes() {
  if (const char* env = std::getenv("TWINSCALE_MEMORY_BYTES")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(v) && v > 0) return v;
  }
  if (FILE* f = std::fopen("/proc/meminfo", "r")) {
    char line[256];
    double kib = -1;
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
    std::fclose(f);
    if (kib > 0) return kib * 1024.0;
  }
  const long pages = ::sysconf(_SC_AVPHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) return static_cast<double>(pages) * static_cast<double>(page);
  return 1e9; // unknown: assume a small machine
}

std::string read_input_file(const std::string& path, const std::string& what, InputKind kind) {
  // open first, then fstat the descriptor: no window between the check and the read
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw InputFileError(path + ": cannot open " + what + " (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(f.fd, &st) != 0) throw InputFileError(path + ": cannot stat " + what + " (" + std::strerror(errno) + ")");
  if (!S_ISREG(st.st_mode))
    throw InputFileError(path + ": not a regular file; a " + what +
                         " must be a plain file (not a directory, device, FIFO or socket)");
  const uint64_t limit = kind == InputKind::Toml  ? kMaxTomlBytes
                         : kind == InputKind::Csv ? kMaxCsvBytes
                                                  : kMaxJsonBytes;
  const auto size = static_cast<uint64_t>(st.st_size);
  if (size > limit)
    throw InputFileError(path + ": " + what + " of " + mib(static_cast<double>(size)) + " is larger than the " +
                         mib(static_cast<double>(limit)) + " limit for " +
                         (kind == InputKind::Toml  ? "hand-written TOML files"
                          : kind == InputKind::Csv ? "CSV tables"
                                                   : "JSON documents"));
  if (kind == InputKind::Json) {
    const double dom = kJsonDomBytesPerTextByte * static_cast<double>(size);
    const double avail = available_memory_bytes();
    if (dom > avail)
      throw InputFileError(path + ": " + what + " of " + mib(static_cast<double>(size)) + " would need about " +
                           mib(dom) + " of memory to parse, but only " + mib(avail) +
                           " is available (MemAvailable); use a machine with more memory");
  }
  ::fcntl(f.fd, F_SETFL, 0); // a regular file: blocking reads from here on
  std::string text;
  text.resize(size);
  size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(f.fd, text.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw InputFileError(path + ": cannot read " + what + " (" + std::strerror(errno) + ")");
    if (n == 0) break; // shrank while reading: take what is there
    got += static_cast<size_t>(n);
  }
  text.resize(got);
  return text;
}

} // namespace twinscale::schedules
