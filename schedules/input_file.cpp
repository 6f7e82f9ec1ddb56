#include "schedules/input_file.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <sys/resource.h>
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

namespace {

/// A number of bytes in the file `path` (a cgroup limit or usage); nullopt when the
/// file is missing, says "max" or holds a value of 2^62 or more (v1's "no limit").
std::optional<double> read_bytes_file(const std::string& path) {
  std::ifstream in(path);
  std::string word;
  if (!(in >> word) || word == "max") return std::nullopt;
  char* end = nullptr;
  const double v = std::strtod(word.c_str(), &end);
  if (end == word.c_str() || *end != '\0' || !(v >= 0) || v >= 0x1p62) return std::nullopt;
  return v;
}

/// Keeps in `best` the smaller room of it and limit − usage (usage absent: 0).
void take_room(MemoryRoom& best, std::optional<double> limit, std::optional<double> usage, const char* source) {
  if (!limit) return;
  const double room = std::max(0.0, *limit - usage.value_or(0));
  if (best.bytes < 0 || room < best.bytes) best = MemoryRoom{room, source};
}

/// The soft RLIMIT_AS less the address space this process already has (VmSize), or a
/// negative figure when there is no limit.
double address_space_room() {
  struct rlimit lim {};
  if (::getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) return -1;
  double vm_kib = 0;
  if (FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f))
      if (std::sscanf(line, "VmSize: %lf kB", &vm_kib) == 1) break;
    std::fclose(f);
  }
  return std::max(0.0, static_cast<double>(lim.rlim_cur) - vm_kib * 1024.0);
}

double meminfo_available() {
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

} // namespace

MemoryRoom cgroup_memory_room(const std::string& proc_self_cgroup, const std::string& root) {
  MemoryRoom best{-1, {}};
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    // "0::/a/b" (v2) or "4:memory:/a/b" (v1)
    const size_t c1 = line.find(':');
    const size_t c2 = c1 == std::string::npos ? c1 : line.find(':', c1 + 1);
    if (c2 == std::string::npos) continue;
    const std::string controllers = line.substr(c1 + 1, c2 - c1 - 1);
    std::string group = line.substr(c2 + 1);
    if (group.find("..") != std::string::npos) continue;
    if (controllers.empty()) { // v2: the group and each parent up to the root
      for (;;) {
        const std::string dir = root + (group == "/" ? "" : group);
        take_room(best, read_bytes_file(dir + "/memory.max"), read_bytes_file(dir + "/memory.current"),
                  "cgroup memory.max");
        if (group == "/" || group.empty()) break;
        group.resize(std::max<size_t>(1, group.rfind('/')));
      }
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) { // v1
      for (const std::string& dir : {root + "/memory" + (group == "/" ? "" : group), root + "/memory"})
        take_room(best, read_bytes_file(dir + "/memory.limit_in_bytes"),
                  read_bytes_file(dir + "/memory.usage_in_bytes"), "cgroup memory.limit_in_bytes");
    }
  }
  return best;
}

MemoryRoom memory_room() {
  if (const char* env = std::getenv("TWINSCALE_MEMORY_BYTES")) {
    char* end = nullptr;
    const double v = std::strtod(env, &end);
    if (end != env && *end == '\0' && std::isfinite(v) && v > 0) return MemoryRoom{v, "TWINSCALE_MEMORY_BYTES"};
  }
  MemoryRoom room{meminfo_available(), "MemAvailable"};
  if (const double as = address_space_room(); as >= 0 && as < room.bytes)
    room = MemoryRoom{as, "RLIMIT_AS (ulimit -v)"};
  std::ifstream in("/proc/self/cgroup");
  const std::string cgroups((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const MemoryRoom cg = cgroup_memory_room(cgroups, "/sys/fs/cgroup"); cg.bytes >= 0 && cg.bytes < room.bytes)
    room = cg;
  room.bytes = std::max(room.bytes, 1.0); // never 0: callers divide by it
  return room;
}

double available_memory_bytes() { return memory_room().bytes; }

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
    const MemoryRoom avail = memory_room();
    if (dom > avail.bytes)
      throw InputFileError(path + ": " + what + " of " + mib(static_cast<double>(size)) + " would need about " +
                           mib(dom) + " of memory to parse, but only " + mib(avail.bytes) + " is available (" +
                           avail.source + "); use a machine with more memory");
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
