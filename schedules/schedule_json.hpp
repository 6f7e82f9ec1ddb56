// The versioned schedule file (JSON; docs/schedule-format.md): write and read back.
#pragma once

#include <iosfwd>
#include <string>

#include "schedules/schedule.hpp"

namespace twinscale::schedules {

/// Writes `schedule` as JSON (format "twinscale-schedule", format_version 1).
/// Deterministic: the same schedule writes the same bytes.
void write_schedule_json(const Schedule& schedule, std::ostream& out);

/// Reads a schedule written by write_schedule_json. Throws ScheduleError naming `path`
/// and the JSON path of the offending value ("$.programs[1].ops[17].kind").
Schedule read_schedule_json(std::istream& in, const std::string& path);

/// read_schedule_json of the file `path`: a regular file within the JSON size and memory
/// limits (schedules/input_file.hpp); ScheduleError otherwise.
Schedule read_schedule_file(const std::string& path);

/// The job as a JSON object text with the keys of the TOML job file (for --json outputs
/// and for recording the effective configuration next to results).
std::string job_to_json(const JobSpec& job);

} // namespace twinscale::schedules
