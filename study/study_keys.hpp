// The study file's keys (`twinscale sweep STUDY.toml`), each described once
// (common/key_schema.hpp): the reader (study/study_file.cpp) and the "Study files" section
// of docs/keys.md walk this table. [axes] is described by study/axes.hpp.
//
// Adding a study key: the member in study_spec.hpp, one entry in study_keys.cpp (in the
// function of its section), then regenerate the reference:
// build/config/twinscale_keys_doc > docs/keys.md.
#pragma once

#include <string>
#include <vector>

#include "common/key_schema.hpp"
#include "study/study_spec.hpp"

namespace twinscale::study {

using StudyKey = KeyField<StudySpec>;

/// Every study key, in the order the file is read and the reference lists them.
const std::vector<StudyKey>& study_keys();
/// The tables of a study file, top level first, in the file's order ([axes] included: its
/// entries are axes, not keys of this table).
const std::vector<KeySection>& study_sections();
/// The "Study files" section of docs/keys.md: the keys, then the axes (the short names
/// and what each sets, and the line saying every job. and cluster. key works).
std::string study_keys_markdown();

} // namespace twinscale::study
