#include "backend/checkpoint.hpp"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "backend/detail/atomic_file.hpp"
#include "backend/error.hpp"

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

void write_manifest(const std::string& dir, const Manifest& m) {
  json j;
  j["format"] = "twinscale-checkpoint";
  j["version"] = m.version;
  j["step"] = m.step;
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

Manifest read_manifest(const std::string& dir, int64_t step) {
  const std::string path = (fs::path(step_dir(dir, step)) / "manifest.json").string();
  std::ifstream in(path);
  if (!in) throw BackendError("checkpoint manifest " + path + ": cannot open");
  Manifest m;
  try {
    const json j = json::parse(in);
    if (j.at("format") != "twinscale-checkpoint" || j.at("version") != 1)
      throw BackendError("checkpoint manifest " + path + ": not a version-1 twinscale checkpoint manifest");
    m.step = j.at("step").get<int64_t>();
    m.tp = j.at("layout").at("tp").get<int64_t>();
    m.pp = j.at("layout").at("pp").get<int64_t>();
    m.dp = j.at("layout").at("dp").get<int64_t>();
    for (const json& s : j.at("shards"))
      m.shards.push_back({s.at("tp").get<int64_t>(), s.at("pp").get<int64_t>(), s.at("bytes").get<uint64_t>(),
                          s.at("fnv1a").get<uint64_t>()});
  } catch (const json::exception& e) {
    throw BackendError("checkpoint manifest " + path + ": malformed: " + e.what());
  }
  if (m.step != step) throw BackendError("checkpoint manifest " + path + ": holds step " + std::to_string(m.step));
  return m;
}

std::optional<int64_t> latest_complete_step(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return std::nullopt;
  std::vector<int64_t> steps;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("step-", 0) != 0) continue;
    char* end = nullptr;
    const long long n = std::strtoll(name.c_str() + 5, &end, 10);
    if (*end == '\0' && end != name.c_str() + 5) steps.push_back(n);
  }
  std::sort(steps.rbegin(), steps.rend());
  for (int64_t s : steps) {
    if (!fs::exists(fs::path(step_dir(dir, s)) / "manifest.json")) continue; // never completed
    try {
      const Manifest m = read_manifest(dir, s);
      bool ok = m.shards.size() == static_cast<size_t>(m.tp * m.pp);
      for (const ShardInfo& sh : m.shards)
        ok = ok && fs::exists(shard_path(dir, s, sh.tp, sh.pp)) &&
             fs::file_size(shard_path(dir, s, sh.tp, sh.pp)) == sh.bytes;
      if (ok) return s;
    } catch (const BackendError&) {}
  }
  return std::nullopt;
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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BackendError("checkpoint shard " + path + ": cannot open");
  std::vector<uint8_t> v((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (v.size() != info.bytes)
    throw BackendError("checkpoint shard " + path + ": " + std::to_string(v.size()) + " bytes, manifest says " +
                       std::to_string(info.bytes));
  if (fnv1a(v.data(), v.size()) != info.fnv1a)
    throw BackendError("checkpoint shard " + path + ": checksum differs from the manifest");
  return v;
}

} // namespace twinscale::backend
