// Reading an input file whole, safely: it must be a regular file (not a device, FIFO,
// socket or directory: `/dev/zero` is refused, not read forever) no larger than a limit
// that depends on the format, and — for documents parsed into a DOM — small enough that
// the DOM fits the memory this machine has available.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "common/error.hpp"

namespace twinscale::schedules {

/// Human-written TOML (job, cluster, fault, recovery): 4 MiB, 100× the largest preset.
inline constexpr uint64_t kMaxTomlBytes = uint64_t{4} << 20;
/// Machine-written JSON (schedules, traces, calibration tables): 1 GiB. A 12,288-GPU
/// GPT-175B schedule is about 60 MiB.
inline constexpr uint64_t kMaxJsonBytes = uint64_t{1} << 30;
/// Tables written by a run and read back (per-rank and link-load CSVs, GPU speed files):
/// 256 MiB. The link CSV of a 12,288-GPU flow run is about 5 MiB.
inline constexpr uint64_t kMaxCsvBytes = uint64_t{256} << 20;
/// nlohmann-json's DOM takes up to about this many bytes of memory per byte of JSON text
/// for the documents here (small objects of short numbers); used to refuse a document
/// whose DOM would not fit the available memory.
inline constexpr double kJsonDomBytesPerTextByte = 16;

/// A file that cannot be read as an input; the message starts with the path.
class InputFileError : public Error {
public:
  explicit InputFileError(const std::string& what) : Error(what) {}
};

enum class InputKind : uint8_t { Toml, Json, Csv };

/// The whole of `path`, a `what` ("job file", "schedule"): must exist, be a regular file
/// and hold at most kMaxTomlBytes / kMaxJsonBytes / kMaxCsvBytes; a JSON document must also leave its DOM
/// room in available_memory_bytes(). Throws InputFileError saying which rule failed.
std::string read_input_file(const std::string& path, const std::string& what, InputKind kind);

/// How much memory this process may still use, and which limit says so.
struct MemoryRoom {
  double bytes = 0;
  /// For messages: "MemAvailable", "RLIMIT_AS (ulimit -v)", "cgroup memory.max",
  /// "cgroup memory.limit_in_bytes" or "TWINSCALE_MEMORY_BYTES".
  std::string source;
};

/// The least of: MemAvailable of /proc/meminfo (else sysconf's free pages); the soft
/// RLIMIT_AS less this process's address space (VmSize); the room under each cgroup
/// memory limit of this process (v2 memory.max − memory.current of its group and every
/// parent, v1 memory.limit_in_bytes − memory.usage_in_bytes). The environment variable
/// TWINSCALE_MEMORY_BYTES (for tests and for sharing a machine) replaces them all.
/// Never 0.
MemoryRoom memory_room();
/// memory_room().bytes.
double available_memory_bytes();

/// The room under the cgroup memory limits that `proc_self_cgroup` (the text of
/// /proc/self/cgroup) names, read from the cgroup file systems under `root`
/// (/sys/fs/cgroup): `source` says which limit binds. bytes < 0 when none is set.
MemoryRoom cgroup_memory_room(const std::string& proc_self_cgroup, const std::string& root);

} // namespace twinscale::schedules
