// Job files: TOML → schedules::JobSpec. Every key is described in schedules/job_keys.cpp
// (reference: docs/keys.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "config/key_overrides.hpp"
#include "schedules/job.hpp"

namespace twinscale::config {

/// Parses a job from TOML text; `file` names the source in messages ("jobs.toml",
/// "preset gpt-175b-megascale"). Throws ConfigError (syntax, unknown key, wrong type,
/// value out of range) and schedules::JobError (impossible parallelism, via check_job).
/// `document_path`: the job file's path, from which a `software` file is resolved (its
/// folder); without it `software` must name a preset.
/// Command-line edits of a job document, made to its TOML before it is read, so that an
/// edited document is checked exactly as a file saying the same (a copy of a job with
/// tp = 1 run with --gpus 64 is checked at 64 GPUs, not at the file's own gpus first).
/// Messages about an edited document name the edits: "job.toml (with --gpus 64): …".
struct JobEdits {
  std::vector<KeyOverride> set;        ///< --set KEY=VALUE, in the order given
  std::optional<int64_t> gpus;         ///< --gpus: the top-level gpus; parallel.dp re-derived from it
  std::optional<int64_t> global_batch; ///< --global-batch: parallel.global_batch
  bool empty() const { return set.empty() && !gpus && !global_batch; }
  /// " (with --gpus 64, --set parallel.tp=2)"; "" when empty.
  std::string note() const;
  /// Makes the edits in `doc`.
  void apply(toml::table& doc) const;
};

schedules::JobSpec parse_job(std::string_view text, const std::string& file, const std::string* document_path = nullptr,
                             const JobEdits& edits = {});
/// Reads and parses a job file.
schedules::JobSpec load_job(const std::string& path, const JobEdits& edits = {});
/// A built-in job preset (presets/jobs/<name>.toml); unknown names list the valid ones.
schedules::JobSpec load_job_preset(const std::string& name, const JobEdits& edits = {});

/// Command-line overrides. `gpus` re-derives dp = gpus / (tp·pp) (must divide);
/// `global_batch` replaces parallel.global_batch. The result is re-checked with
/// schedules::check_job. Non-positive values are a ConfigError.
void apply_overrides(schedules::JobSpec& job, std::optional<int64_t> gpus, std::optional<int64_t> global_batch);

} // namespace twinscale::config
