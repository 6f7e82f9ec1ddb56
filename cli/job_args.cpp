#include "cli/job_args.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "config/job_file.hpp"
#include "config/presets.hpp"

namespace twinscale::cli {

void JobArgs::add_to(CLI::App& command) {
  command.add_option("job", file_, "job file (TOML)");
  std::string presets;
  for (const auto& n : config::preset_names("jobs")) presets += (presets.empty() ? "" : ", ") + n;
  command.add_option("--preset", preset_, "built-in job preset: " + presets);
  command.add_option("--gpus", gpus_, "total GPUs; dp = gpus / (tp·pp)");
  command.add_option("--global-batch", global_batch_, "global batch in sequences");
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

std::string JobArgs::source() const { return preset_.empty() ? file_ : "preset " + preset_; }

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot write (cannot create " + tmp + ")");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      throw std::runtime_error(path + ": write failed");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw std::runtime_error(path + ": cannot rename " + tmp + " into place");
  }
}

} // namespace twinscale::cli
