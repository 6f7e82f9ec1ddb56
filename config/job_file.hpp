// Job files: TOML → schedules::JobSpec. Every key is documented in job_file.cpp.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "schedules/job.hpp"

namespace twinscale::config {

/// Parses a job from TOML text; `file` names the source in messages ("jobs.toml",
/// "preset gpt-175b-megascale"). Throws ConfigError (syntax, unknown key, wrong type,
/// value out of range) and schedules::JobError (impossible parallelism, via check_job).
/// `document_path`: the job file's path, from which a `software` file is resolved (its
/// folder); without it `software` must name a preset.
schedules::JobSpec parse_job(std::string_view text, const std::string& file,
                             const std::string* document_path = nullptr);
/// Reads and parses a job file.
schedules::JobSpec load_job(const std::string& path);
/// A built-in job preset (presets/jobs/<name>.toml); unknown names list the valid ones.
schedules::JobSpec load_job_preset(const std::string& name);

/// Command-line overrides. `gpus` re-derives dp = gpus / (tp·pp) (must divide);
/// `global_batch` replaces parallel.global_batch. The result is re-checked with
/// schedules::check_job. Non-positive values are a ConfigError.
void apply_overrides(schedules::JobSpec& job, std::optional<int64_t> gpus, std::optional<int64_t> global_batch);

} // namespace twinscale::config
