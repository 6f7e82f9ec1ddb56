// A study of several jobs on one fabric (`twinscale simulate-jobs STUDY.toml`): the
// cluster, and per job its job file or preset, GPU count and placement. Keys in
// jobs_study.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedules/job.hpp"
#include "topology/multi_placement.hpp"

namespace twinscale::config {

struct StudyJob {
  std::string name;
  std::string source;             // the job's preset name or file, for messages
  schedules::JobSpec job;         // with the study's gpus (and global_batch) applied
  topology::JobRequest placement; // gpus, policy, seed
  double start_s = 0;             // when the job starts on the shared fabric
};

struct JobsStudy {
  std::string file;
  std::string cluster; // preset name or file (resolved against the study's folder)
  uint64_t seed = 1;   // ECMP hashing
  std::vector<StudyJob> jobs;
};

/// Reads and checks a study file. Throws ConfigError naming the file and key (bad key,
/// no job, duplicate name, …) and JobError (a job that cannot run on its GPUs).
JobsStudy load_jobs_study(const std::string& path);

} // namespace twinscale::config
