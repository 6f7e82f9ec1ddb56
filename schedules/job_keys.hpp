// The job's keys, each described once (common/key_schema.hpp): the job file reader
// (config/job_file.cpp), the job object of schedule JSON (schedule_json.cpp), the --set
// overrides and the key reference docs/keys.md are all derived from this table.
//
// Adding a job key: add the member to job.hpp, then one entry to the table in
// job_keys.cpp (in the function of its section), e.g.
//   member<J, &JobSpec::options, &ScheduleOptions::my_key>("schedule.my_key")
//       .range(0, 8).stack_fact().json_unless_default().says("what it does"),
// and regenerate the reference: build/config/twinscale_keys_doc > docs/keys.md.
// A key new to schedule JSON should be json_unless_default() so that earlier schedule
// files are unchanged and still read.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/key_schema.hpp"
#include "schedules/job.hpp"

namespace twinscale::schedules {

using JobKey = KeyField<JobSpec>;

/// Every job key, in the order files are read and the reference lists them.
const std::vector<JobKey>& job_keys();
/// The tables of a job, top level first.
const std::vector<KeySection>& job_sections();
/// The key of files and --set named `key` ("parallel.tp"), or nullptr.
const JobKey* find_job_key(std::string_view key);

} // namespace twinscale::schedules
