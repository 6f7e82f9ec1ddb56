#include "backend/checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/detail/atomic_file.hpp"
#include "backend/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/json_document.hpp"
#include "schedules/limits.hpp"
#include "schedules/schedule_json.hpp"

namespace twinscale::backend {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<uint8_t> synthetic_state(int64_t tp, int64_t pp, int64_t step, size_t bytes) {
  std::vector<uint8_t> v(bytes);
  uint64_t x = 0x9E3779B97F4A7C15ull ^ (static_cast<uint64_t>(tp) << 40) ^ (static_cast<uint64_t>(pp) << 20) ^
               static_cast<uint64_t>(step);
  for (size_t i = 0; i < bytes; ++i) { // xorshift64
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = static_cast<uint8_t>(x);
  }
  return v;
}

uint64_t fnv1a(const uint8_t* data, size_t bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= data[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

std::string step_dir(const std::string& dir, int64_t step) {
  return (fs::path(dir) / ("step-" + std::to_string(step))).string();
}

std::string shard_path(const std::string& dir, int64_t step, int64_t tp, int64_t pp) {
  return (fs::path(step_dir(dir, step)) / ("shard-tp" + std::to_string(tp) + "-pp" + std::to_string(pp) + ".bin"))
      .string();
}

JobIdentity job_identity(const schedules::Schedule& schedule) {
  std::ostringstream text;
  schedules::write_schedule_json(schedule, text);
  const std::string s = text.str();
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx",
                static_cast<unsigned long long>(fnv1a(reinterpret_cast<const uint8_t*>(s.data()), s.size())));
  return JobIdentity{schedule.job.name, hex};
}

void write_manifest(const std::string& dir, const Manifest& m) {
  json j;
  j["format"] = "twinscale-checkpoint";
  j["version"] = m.version;
  j["step"] = m.step;
  j["job"] = {{"name", m.job.name}, {"schedule_fnv1a", m.job.schedule_fnv1a}};
  j["layout"] = {{"tp", m.tp}, {"pp", m.pp}, {"dp", m.dp}};
  j["shards"] = json::array();
  for (const ShardInfo& s : m.shards)
    j["shards"].push_back({{"tp", s.tp}, {"pp", s.pp}, {"bytes", s.bytes}, {"fnv1a", s.fnv1a}});
  detail::write_file_atomically((fs::path(step_dir(dir, m.step)) / "manifest.json").string(), j.dump(1) + "\n");
  remove_checkpoint_temporaries(dir, m.step);
}

size_t remove_checkpoint_temporaries(const std::string& dir, std::optional<int64_t> only_step) {
  std::error_code ec;
  std::vector<fs::path> step_dirs;
  if (only_step) {
    step_dirs.emplace_back(step_dir(dir, *only_step));
  } else {
    for (const auto& e : fs::directory_iterator(dir, ec))
      if (e.path().filename().string().rfind("step-", 0) == 0 && e.is_directory(ec)) step_dirs.push_back(e.path());
  }
  size_t removed = 0;
  for (const fs::path& d : step_dirs) {
    std::vector<fs::path> stale;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const std::string name = e.path().filename().string();
      if (name.rfind("shard-", 0) == 0 && name.find(".bin.tmp.") != std::string::npos && e.is_regular_file(ec))
        stale.push_back(e.path());
    }
    for (const fs::path& p : stale) removed += fs::remove(p, ec) ? 1 : 0;
  }
  return removed;
}

namespace {

[[noreturn]] void bad_manifest(const std::string& path, const std::string& why) {
  throw BackendError("checkpoint manifest " + path + ": " + why);
}

/// An exact integer `key` of `obj` (at JSON path `where`) in [min, max].
int64_t int_field(const json& obj, const char* key, const std::string& path, const std::string& where, int64_t min,
                  int64_t max) {
  const auto it = obj.find(key);
  if (it == obj.end()) bad_manifest(path, where + ": \"" + key + "\" is missing");
  const std::string at = where + "." + key;
  if (!it->is_number_integer()) bad_manifest(path, at + ": must be an integer, got " + it->type_name());
  const bool too_big = it->is_number_unsigned() && it->get<uint64_t>() > static_cast<uint64_t>(max);
  if (too_big || it->get<int64_t>() < min || it->get<int64_t>() > max)
    bad_manifest(path, at + ": " + it->dump() + " is out of range [" + std::to_string(min) + ", " +
                           std::to_string(max) + "]");
  return it->get<int64_t>();
}

/// The object `key` of `obj`, holding only the keys `known`.
const json& object_field(const json& obj, const char* key, std::initializer_list<std::string_view> known,
                         const std::string& path, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_object()) bad_manifest(path, where + ": \"" + key + "\" must be an object");
  try {
    schedules::check_json_keys(*it, known, "checkpoint manifest " + path, where + "." + key);
  } catch (const schedules::JsonDocumentError& e) {
    throw BackendError(e.what());
  }
  return *it;
}

/// The parsed manifest at `path`: the format's fields, each checked.
json manifest_json(const std::string& path) {
  std::string text;
  try {
    text = schedules::read_input_file(path, "checkpoint manifest", schedules::InputKind::Json);
  } catch (const schedules::InputFileError& e) { // missing, a folder, a device, too large
    throw BackendError(std::string("checkpoint manifest ") + e.what());
  }
  const std::string label = "checkpoint manifest " + path;
  try {
    json j = schedules::parse_json_document(text, label);
    if (!j.is_object()) bad_manifest(path, "must be a JSON object");
    schedules::check_json_keys(j, {"format", "version", "step", "job", "layout", "shards"}, label, "$");
    return j;
  } catch (const schedules::JsonDocumentError& e) { // not JSON, a repeated or unknown key
    throw BackendError(e.what());
  }
}

/// The shard list of manifest `j`: one entry per (tp, pp) of m's layout, each once.
void read_shard_list(const json& j, const std::string& path, Manifest& m) {
  const auto it = j.find("shards");
  if (it == j.end() || !it->is_array()) bad_manifest(path, "$: \"shards\" must be an array");
  std::vector<int> seen(static_cast<size_t>(m.tp * m.pp), -1);
  for (size_t i = 0; i < it->size(); ++i) {
    const json& s = (*it)[i];
    const std::string where = "$.shards[" + std::to_string(i) + "]";
    if (!s.is_object()) bad_manifest(path, where + ": must be an object");
    try {
      schedules::check_json_keys(s, {"tp", "pp", "bytes", "fnv1a"}, "checkpoint manifest " + path, where);
    } catch (const schedules::JsonDocumentError& e) {
      throw BackendError(e.what());
    }
    ShardInfo info;
    info.tp = int_field(s, "tp", path, where, 0, m.tp - 1);
    info.pp = int_field(s, "pp", path, where, 0, m.pp - 1);
    info.bytes = static_cast<uint64_t>(int_field(s, "bytes", path, where, 0, int64_t{1} << 53));
    const auto h = s.find("fnv1a");
    if (h == s.end() || !h->is_number_unsigned()) bad_manifest(path, where + ".fnv1a: must be an unsigned integer");
    info.fnv1a = h->get<uint64_t>();
    int& first = seen[static_cast<size_t>(info.pp * m.tp + info.tp)];
    if (first >= 0)
      bad_manifest(path, where + ": repeats the shard of tp " + std::to_string(info.tp) + " pp " +
                             std::to_string(info.pp) + " (already $.shards[" + std::to_string(first) + "])");
    first = static_cast<int>(i);
    m.shards.push_back(info);
  }
  if (m.shards.size() != seen.size())
    bad_manifest(path, "$.shards: lists " + std::to_string(m.shards.size()) + " shards; the layout tp " +
                           std::to_string(m.tp) + " × pp " + std::to_string(m.pp) + " has " +
                           std::to_string(seen.size()));
}

} // namespace

Manifest read_manifest(const std::string& dir, int64_t step) {
  const std::string path = (fs::path(step_dir(dir, step)) / "manifest.json").string();
  const json j = manifest_json(path);
  if (j.value("format", json()) != "twinscale-checkpoint")
    bad_manifest(path, "$.format: must be \"twinscale-checkpoint\" (not a twinscale checkpoint manifest)");
  Manifest m;
  m.version = static_cast<int>(int_field(j, "version", path, "$", 1, 1 << 20));
  if (m.version == 1)
    bad_manifest(path, "version 1 carries no job identity, so a restore cannot tell which job wrote it; write a "
                       "new checkpoint with this build (--checkpoint-step)");
  if (m.version != kManifestVersion)
    bad_manifest(path, "version " + std::to_string(m.version) + " is not supported; this build reads version " +
                           std::to_string(kManifestVersion));
  m.step = int_field(j, "step", path, "$", 0, INT64_MAX);
  if (m.step != step)
    bad_manifest(path,
                 "$.step: holds step " + std::to_string(m.step) + ", but its folder is step-" + std::to_string(step));
  const json& job = object_field(j, "job", {"name", "schedule_fnv1a"}, path, "$");
  if (!job.contains("name") || !job["name"].is_string()) bad_manifest(path, "$.job.name: must be a string");
  const json& hash = job.value("schedule_fnv1a", json());
  if (!hash.is_string() || hash.get<std::string>().size() != 16 ||
      hash.get<std::string>().find_first_not_of("0123456789abcdef") != std::string::npos)
    bad_manifest(path, "$.job.schedule_fnv1a: must be 16 lower-case hex digits");
  m.job = JobIdentity{job["name"].get<std::string>(), hash.get<std::string>()};
  const json& layout = object_field(j, "layout", {"tp", "pp", "dp"}, path, "$");
  m.tp = int_field(layout, "tp", path, "$.layout", 1, schedules::kMaxRanks);
  m.pp = int_field(layout, "pp", path, "$.layout", 1, schedules::kMaxRanks);
  m.dp = int_field(layout, "dp", path, "$.layout", 1, schedules::kMaxRanks);
  if (m.tp * m.pp > schedules::kMaxRanks / m.dp)
    bad_manifest(path, "$.layout: tp·pp·dp is more than " + std::to_string(schedules::kMaxRanks) + " ranks");
  read_shard_list(j, path, m);
  return m;
}

namespace {

/// What is wrong with shard `info` of step `step` (missing, not a regular file, another
/// size than listed), or "" when nothing is before its checksum is read.
std::string shard_problem(const std::string& dir, int64_t step, const ShardInfo& info) {
  const std::string path = shard_path(dir, step, info.tp, info.pp);
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return "checkpoint shard " + path + ": cannot be read (" + std::strerror(errno) + "); the manifest lists it";
  if (!S_ISREG(st.st_mode))
    return "checkpoint shard " + path +
           ": not a regular file (a folder, a device or a link to one); a shard is the plain file the run wrote";
  if (static_cast<uint64_t>(st.st_size) != info.bytes)
    return "checkpoint shard " + path + ": " + std::to_string(st.st_size) + " bytes, the manifest says " +
           std::to_string(info.bytes);
  return {};
}

/// Why step `step` of `dir` cannot be restored, or "" when it can.
std::string step_problem(const std::string& dir, int64_t step) {
  std::error_code ec;
  if (!fs::exists(fs::path(step_dir(dir, step)) / "manifest.json", ec))
    return "no manifest.json: never committed (a step exists once its manifest is written, after every shard)";
  try {
    const Manifest m = read_manifest(dir, step);
    for (const ShardInfo& sh : m.shards)
      if (std::string p = shard_problem(dir, step, sh); !p.empty()) return p;
  } catch (const BackendError& e) {
    return e.what();
  }
  return {};
}

} // namespace

CheckpointScan scan_checkpoints(const std::string& dir) {
  CheckpointScan scan;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return scan;
  std::vector<int64_t> steps;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0) continue;
    char* end = nullptr;
    errno = 0;
    const long long n = std::strtoll(name.c_str() + 5, &end, 10);
    if (*end == '\0' && end != name.c_str() + 5 && n >= 0 && errno == 0) steps.push_back(n);
  }
  std::sort(steps.rbegin(), steps.rend());
  for (int64_t s : steps) {
    const std::string problem = step_problem(dir, s);
    if (problem.empty()) {
      scan.step = s;
      break;
    }
    scan.skipped.push_back("step " + std::to_string(s) + ": " + problem);
  }
  return scan;
}

std::optional<int64_t> latest_complete_step(const std::string& dir) { return scan_checkpoints(dir).step; }

void check_same_job(const Manifest& m, const std::string& dir, const JobIdentity& run,
                    const schedules::Layout& layout) {
  const std::string what = "checkpoint step " + std::to_string(m.step) + " in " + dir;
  if (m.tp != layout.tp || m.pp != layout.pp)
    throw BackendError(what + " has tp " + std::to_string(m.tp) + " pp " + std::to_string(m.pp) + ", the run has tp " +
                       std::to_string(layout.tp) + " pp " + std::to_string(layout.pp));
  if (m.job.schedule_fnv1a != run.schedule_fnv1a)
    throw BackendError(what + " belongs to another job: job '" + m.job.name + "' (schedule FNV-1a " +
                       m.job.schedule_fnv1a + "), but this run is job '" + run.name + "' (schedule FNV-1a " +
                       run.schedule_fnv1a + "); restore a checkpoint this job wrote, or give another --checkpoint-dir");
}

ShardPersist::ShardPersist(std::string path, std::vector<uint8_t> host_copy, double bw)
    : path_(std::move(path)), data_(std::move(host_copy)) {
  thread_ = std::thread([this, bw] {
    const std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
    std::error_code ec;
    fs::create_directories(fs::path(path_).parent_path(), ec);
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
      error_ = "cannot create " + tmp + ": " + std::strerror(errno);
      return;
    }
    const auto t0 = std::chrono::steady_clock::now();
    const size_t chunk = 64 * 1024;
    for (size_t done = 0; done < data_.size();) {
      const ssize_t n = ::write(fd, data_.data() + done, std::min(chunk, data_.size() - done));
      if (n < 0) {
        if (errno == EINTR) continue;
        error_ = "write " + tmp + ": " + std::strerror(errno);
        ::close(fd);
        return;
      }
      done += static_cast<size_t>(n);
      if (bw > 0) // pace to the storage bandwidth
        std::this_thread::sleep_until(t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                               std::chrono::duration<double>(static_cast<double>(done) / bw)));
    }
    if (::fsync(fd) != 0) error_ = "fsync " + tmp + ": " + std::strerror(errno);
    ::close(fd);
    if (error_.empty() && ::rename(tmp.c_str(), path_.c_str()) != 0)
      error_ = "rename " + tmp + ": " + std::strerror(errno);
  });
}

ShardPersist::~ShardPersist() {
  if (thread_.joinable()) thread_.join();
}

std::string ShardPersist::join() {
  if (thread_.joinable()) thread_.join();
  return error_;
}

std::vector<uint8_t> read_shard(const std::string& dir, int64_t step, const ShardInfo& info) {
  const std::string path = shard_path(dir, step, info.tp, info.pp);
  // open, then check the descriptor: a folder or a link to /dev/zero is refused, not read
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw BackendError("checkpoint shard " + path + ": cannot open (" + std::strerror(errno) + ")");
  struct stat st {};
  std::string problem;
  if (::fstat(fd, &st) != 0)
    problem = std::string("cannot stat (") + std::strerror(errno) + ")";
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file (a folder, a device or a link to one); a shard is the plain file the run wrote";
  else if (static_cast<uint64_t>(st.st_size) != info.bytes)
    problem = std::to_string(st.st_size) + " bytes, the manifest says " + std::to_string(info.bytes);
  std::vector<uint8_t> v;
  if (problem.empty()) {
    ::fcntl(fd, F_SETFL, 0);
    v.resize(info.bytes);
    size_t got = 0;
    while (got < v.size()) {
      const ssize_t n = ::read(fd, v.data() + got, v.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        problem = n < 0 ? std::string("cannot read (") + std::strerror(errno) + ")"
                        : std::to_string(got) + " bytes, the manifest says " + std::to_string(info.bytes);
        break;
      }
      got += static_cast<size_t>(n);
    }
  }
  ::close(fd);
  if (!problem.empty()) throw BackendError("checkpoint shard " + path + ": " + problem);
  if (fnv1a(v.data(), v.size()) != info.fnv1a)
    throw BackendError("checkpoint shard " + path + ": checksum differs from the manifest (the file is damaged)");
  return v;
}

} // namespace twinscale::backend
