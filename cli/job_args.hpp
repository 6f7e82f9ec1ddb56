// Shared command-line handling of "which job": JOB (a TOML file) | --preset NAME, with
// --gpus N (re-derives dp) and --global-batch B. Used by schedule, simulate, campaign, run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/key_overrides.hpp"
#include "schedules/job.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::cli {

class JobArgs {
public:
  /// Adds the positional JOB and --preset, --gpus, --global-batch, --gpu-memory-gb and
  /// --set KEY=VALUE (repeatable) to `command`.
  void add_to(CLI::App& command);
  /// Throws CLI::ValidationError (usage, exit 2) unless exactly one of JOB / --preset is
  /// given. Call from the sub-command's callback (it runs inside CLI::App::parse).
  void check_usage() const;
  /// Loads the job with the overrides made to its TOML before it is read, so that they are
  /// checked as the file's own keys (ConfigError / JobError on bad input, naming them).
  schedules::JobSpec load() const;
  /// The `--set cluster.KEY=VALUE` overrides, KEY relative to the cluster's document (the
  /// job's `cluster` is a name, so a key under it can only mean the cluster's file).
  std::vector<config::KeyOverride> cluster_edits() const;
  /// For commands that never read the cluster (run, probe): a ConfigError naming the first
  /// --set cluster.KEY=VALUE, which would have no effect, and `why`.
  void refuse_cluster_edits(const std::string& why) const;
  /// "preset NAME" or the file path, for messages.
  std::string source() const;
  /// The job file given (empty with --preset), for checks that an output is not an input.
  const std::string& file() const { return file_; }
  /// What lowering checks memory against: --gpu-memory-gb if given, else the memory of
  /// one GPU of the job's cluster (config::load_cluster; ConfigError if it cannot be read).
  schedules::LoweringTarget target_for(const schedules::JobSpec& job) const;
  /// --gpu-memory-gb in bytes when given (checked > 0 where it is used).
  std::optional<double> gpu_memory_override() const;

private:
  std::string file_;
  std::string preset_;
  std::optional<int64_t> gpus_;
  std::optional<int64_t> global_batch_;
  std::optional<double> gpu_memory_gb_;
  std::vector<std::string> set_;
};

/// GPU memory of `cluster` (a cluster preset name or file) in bytes, or `override_gb`
/// (GB) when given. Throws ConfigError naming the cluster and suggesting --gpu-memory-gb.
double gpu_memory_bytes(const std::string& cluster, std::optional<double> override_gb,
                        const std::vector<config::KeyOverride>& cluster_edits = {});

/// Adds --set KEY=VALUE (repeatable) to a command that reads a cluster and no job: KEY as
/// the cluster's TOML says it, or `cluster.KEY` as the job commands write it.
void add_cluster_set_option(CLI::App& command, std::vector<std::string>& set);

/// The overrides of a cluster's document from `set` (add_cluster_set_option; a leading
/// `cluster.` dropped). ConfigError naming the bad one (config::parse_key_override).
std::vector<config::KeyOverride> cluster_key_overrides(const std::vector<std::string>& set);

/// "0-7,64,100-103" → sorted ranks below `world`; config::ConfigError naming the bad piece.
std::vector<int64_t> parse_ranks(const std::string& text, int64_t world);

/// Writes `text` to `path` under the one output policy (schedules/output_file.hpp:
/// atomic for regular files, in place for devices and FIFOs, "disk full" named).
/// Throws twinscale::Error naming the path on failure.
void write_file_atomically(const std::string& path, const std::string& text);

/// Creates the output directory `dir` (and its parents) that `option` names. Throws
/// config::ConfigError naming the option, the directory and why it cannot be made.
void make_output_dir(const std::string& dir, const std::string& option);

} // namespace twinscale::cli
