// Study files: TOML → study::StudySpec. Every key is documented in study_file.cpp.
#pragma once

#include <string>
#include <string_view>

#include "study/study_spec.hpp"

namespace twinscale::study {

/// Parses a study from TOML text; `file` names it in messages and relative job and
/// cluster paths resolve against its directory. Throws config::ConfigError naming the
/// file and key (unknown key, wrong type, bad value, empty or duplicate axis values).
StudySpec parse_study(std::string_view text, const std::string& file);
/// Reads and parses a study file.
StudySpec load_study(const std::string& path);

} // namespace twinscale::study
