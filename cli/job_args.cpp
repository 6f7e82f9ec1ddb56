#include "cli/job_args.hpp"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "cli/checked_options.hpp"
#include "common/error.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/limits.hpp"
#include "schedules/output_file.hpp"

namespace twinscale::cli {

void JobArgs::add_to(CLI::App& command) {
  command.add_option("job", file_, "job file (TOML)");
  std::string presets;
  for (const auto& n : config::preset_names("jobs")) presets += (presets.empty() ? "" : ", ") + n;
  command.add_option("--preset", preset_, "built-in job preset: " + presets);
  add_integer_option(command, "--gpus", gpus_, 1, schedules::kMaxRanks, "GPUs of one job: at most 2^20",
                     "total GPUs; dp = gpus / (tp·pp)");
  add_integer_option(command, "--global-batch", global_batch_, 1, schedules::kMaxGlobalBatch,
                     "sequences per iteration: at most 2^24", "global batch in sequences");
  command.add_option("--gpu-memory-gb", gpu_memory_gb_, "GPU memory for the memory check (default: the job's cluster)");
  command
      .add_option("--set", set_,
                  "KEY=VALUE: change a key of the job's TOML before it is checked, as if the file said it "
                  "(repeatable), e.g. --set parallel.tp=4 --set schedule.pipeline=interleaved")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
}

void JobArgs::check_usage() const {
  if (file_.empty() == preset_.empty())
    throw CLI::ValidationError("JOB", "give exactly one of a job file (JOB) or --preset NAME");
  // every command that takes it: 0 or a negative size is never one GPU's memory (nan and
  // inf are refused for every number option by require_finite_numbers)
  if (gpu_memory_gb_ && *gpu_memory_gb_ <= 0) {
    std::ostringstream v;
    v << *gpu_memory_gb_;
    throw config::ConfigError("--gpu-memory-gb " + v.str() + ": must be > 0 (the memory of one GPU, in GB)");
  }
}

schedules::JobSpec JobArgs::load() const {
  config::JobEdits edits;
  for (const std::string& s : set_) {
    config::KeyOverride o = config::parse_key_override(s);
    if (!(o.path.size() > 1 && o.path.front() == "cluster")) edits.set.push_back(std::move(o));
  }
  edits.gpus = gpus_;
  edits.global_batch = global_batch_;
  return preset_.empty() ? config::load_job(file_, edits) : config::load_job_preset(preset_, edits);
}

std::vector<config::KeyOverride> JobArgs::cluster_edits() const {
  std::vector<config::KeyOverride> out;
  for (const std::string& s : set_) {
    config::KeyOverride o = config::parse_key_override(s);
    if (o.path.size() > 1 && o.path.front() == "cluster") {
      o.path.erase(o.path.begin());
      out.push_back(std::move(o));
    }
  }
  return out;
}

void JobArgs::refuse_cluster_edits(const std::string& why) const {
  const auto edits = cluster_edits();
  if (!edits.empty())
    throw config::ConfigError("--set " + edits.front().text + ": this command does not read the cluster (" + why +
                              "), so a cluster key would have no effect");
}

schedules::LoweringTarget JobArgs::target_for(const schedules::JobSpec& job) const {
  schedules::LoweringTarget t;
  t.gpu_memory_bytes = gpu_memory_bytes(job.cluster, gpu_memory_gb_, cluster_edits());
  return t;
}

std::optional<double> JobArgs::gpu_memory_override() const {
  if (!gpu_memory_gb_) return std::nullopt;
  return *gpu_memory_gb_ * 1e9;
}

double gpu_memory_bytes(const std::string& cluster, std::optional<double> override_gb,
                        const std::vector<config::KeyOverride>& cluster_edits) {
  if (override_gb) {
    if (!(*override_gb > 0)) throw config::ConfigError("--gpu-memory-gb must be > 0");
    return *override_gb * 1e9;
  }
  topology::ClusterSpec spec;
  try {
    spec = config::load_cluster(cluster, cluster_edits);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(std::string(e.what()) + " (the job's cluster '" + cluster +
                              "' gives the GPU memory; or pass --gpu-memory-gb)");
  }
  const config::GpuMemoryLimit limit = config::tightest_gpu_memory(spec); // mixed models: the smallest
  if (!(limit.bytes > 0))
    throw config::ConfigError("cluster '" + cluster + "' has no GPU memory size; pass --gpu-memory-gb");
  return limit.bytes;
}

void add_cluster_set_option(CLI::App& command, std::vector<std::string>& set) {
  command
      .add_option("--set", set,
                  "KEY=VALUE: change a key of the cluster's TOML before it is checked, as if the file said it "
                  "(repeatable), e.g. --set server.nics=4")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
}

std::vector<config::KeyOverride> cluster_key_overrides(const std::vector<std::string>& set) {
  std::vector<config::KeyOverride> edits;
  for (const std::string& text : set) {
    config::KeyOverride o = config::parse_key_override(text);
    if (o.path.size() > 1 && o.path.front() == "cluster") o.path.erase(o.path.begin()); // as the job commands write it
    edits.push_back(std::move(o));
  }
  return edits;
}

std::string JobArgs::source() const { return preset_.empty() ? file_ : "preset " + preset_; }

void write_file_atomically(const std::string& path, const std::string& text) {
  schedules::write_output_file(path, text);
}

void make_output_dir(const std::string& dir, const std::string& option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw config::ConfigError(option + " " + dir + ": cannot create the directory (" + ec.message() + ")");
}

/// "0-7,64,100-103" → sorted ranks; usage errors name the bad piece.
std::vector<int64_t> parse_ranks(const std::string& text, int64_t world) {
  std::set<int64_t> out;
  std::stringstream ss(text);
  std::string piece;
  while (std::getline(ss, piece, ',')) {
    if (piece.empty()) continue;
    int64_t a = 0, b = 0;
    const auto dash = piece.find('-');
    try {
      size_t used = 0;
      if (dash == std::string::npos) {
        a = b = std::stoll(piece, &used);
        if (used != piece.size()) throw std::invalid_argument(piece);
      } else {
        a = std::stoll(piece.substr(0, dash), &used);
        if (used != dash) throw std::invalid_argument(piece);
        b = std::stoll(piece.substr(dash + 1), &used);
        if (used != piece.size() - dash - 1) throw std::invalid_argument(piece);
      }
    } catch (const std::exception&) {
      throw config::ConfigError("--ranks: '" + piece + "' is not a rank or a range A-B (e.g. 0-7,64)");
    }
    if (a < 0 || b < a || b >= world)
      throw config::ConfigError("--ranks: '" + piece + "' outside 0.." + std::to_string(world - 1));
    for (int64_t r = a; r <= b; ++r) out.insert(r);
  }
  return {out.begin(), out.end()};
}

} // namespace twinscale::cli
