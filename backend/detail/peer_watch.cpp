#include "backend/detail/peer_watch.hpp"

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <limits>
#include <signal.h>

#include <nlohmann/json.hpp>

#include "backend/detail/atomic_file.hpp"

namespace twinscale::backend::detail {

std::string abort_flag_path(const std::string& run_dir) { return (std::filesystem::path(run_dir) / "abort").string(); }

std::function<bool()> abort_flag_up(const std::string& run_dir) {
  return [flag = abort_flag_path(run_dir)] { return std::filesystem::exists(flag); };
}

std::function<bool()> start_barrier_abort(const std::string& run_dir, int rank, const std::string& host,
                                          double min_interval_s) {
  namespace fs = std::filesystem;
  using Clock = std::chrono::steady_clock;
  const fs::path dir(run_dir);
  return [dir, rank, host, min_interval_s, flag_up = abort_flag_up(run_dir), next = Clock::time_point{}]() mutable {
    if (flag_up()) return true;
    const Clock::time_point now = Clock::now();
    if (now < next) return false;
    next = now + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(min_interval_s));
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with("rank-") || !name.ends_with(".started")) continue;
      // A file this watch cannot read as the runner writes it (not JSON, a field missing
      // or of another type: a partly written or foreign file) names no rank to check.
      const auto started = nlohmann::json::parse(std::ifstream(e.path()), nullptr, false);
      if (!started.is_object()) continue;
      const auto r = started.find("rank"), h = started.find("host"), p = started.find("pid");
      if (r == started.end() || !r->is_number_integer() || h == started.end() || !h->is_string() ||
          p == started.end() || !p->is_number_integer())
        continue;
      if (r->get<int64_t>() == rank || h->get<std::string>() != host) continue;
      const int64_t pid = p->get<int64_t>();
      if (pid <= 0 || pid > std::numeric_limits<pid_t>::max() || ::kill(static_cast<pid_t>(pid), 0) == 0 ||
          errno != ESRCH)
        continue;
      write_file_atomically(abort_flag_path(dir.string()), "{\"rank\": " + std::to_string(r->get<int64_t>()) +
                                                               ", \"status\": \"died before the start\"}\n");
      return true;
    }
    return false;
  };
}

} // namespace twinscale::backend::detail
