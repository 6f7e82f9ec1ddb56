#include "cli/job_args.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "cli/checked_options.hpp"
#include "common/error.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/limits.hpp"

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
}

void JobArgs::check_usage() const {
  if (file_.empty() == preset_.empty())
    throw CLI::ValidationError("JOB", "give exactly one of a job file (JOB) or --preset NAME");
}

schedules::JobSpec JobArgs::load() const {
  schedules::JobSpec job = preset_.empty() ? config::load_job(file_) : config::load_job_preset(preset_);
  config::apply_overrides(job, gpus_, global_batch_);
  return job;
}

schedules::LoweringTarget JobArgs::target_for(const schedules::JobSpec& job) const {
  schedules::LoweringTarget t;
  t.gpu_memory_bytes = gpu_memory_bytes(job.cluster, gpu_memory_gb_);
  return t;
}

std::optional<double> JobArgs::gpu_memory_override() const {
  if (!gpu_memory_gb_) return std::nullopt;
  return *gpu_memory_gb_ * 1e9;
}

double gpu_memory_bytes(const std::string& cluster, std::optional<double> override_gb) {
  if (override_gb) {
    if (!(*override_gb > 0)) throw config::ConfigError("--gpu-memory-gb must be > 0");
    return *override_gb * 1e9;
  }
  topology::ClusterSpec spec;
  try {
    spec = config::load_cluster(cluster);
  } catch (const config::ConfigError& e) {
    throw config::ConfigError(std::string(e.what()) + " (the job's cluster '" + cluster +
                              "' gives the GPU memory; or pass --gpu-memory-gb)");
  }
  const config::GpuMemoryLimit limit = config::tightest_gpu_memory(spec); // mixed models: the smallest
  if (!(limit.bytes > 0))
    throw config::ConfigError("cluster '" + cluster + "' has no GPU memory size; pass --gpu-memory-gb");
  return limit.bytes;
}

std::string JobArgs::source() const { return preset_.empty() ? file_ : "preset " + preset_; }

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw twinscale::Error(path + ": cannot write (cannot create " + tmp + ")");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw twinscale::Error(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw twinscale::Error(path + ": cannot rename " + tmp + " into place");
  }
}

} // namespace twinscale::cli
