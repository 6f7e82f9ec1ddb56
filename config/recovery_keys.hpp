// The recovery file's keys, each described once (common/key_schema.hpp): the recovery
// reader (config/recovery_file.cpp) and the key reference docs/keys.md are derived from
// this table.
//
// Adding a recovery key: the member in faults/recovery_policy.hpp or
// faults/checkpoint_policy.hpp, one entry in recovery_keys.cpp (in the function of its
// table), then regenerate the reference: build/config/twinscale_keys_doc > docs/keys.md.
#pragma once

#include <vector>

#include "common/key_schema.hpp"
#include "config/recovery_file.hpp"

namespace twinscale::config {

using RecoveryKey = KeyField<RecoveryFile>;

/// Every recovery file key, in the order the reference lists them and the reader reads them.
const std::vector<RecoveryKey>& recovery_keys();
/// The tables of a recovery file, top level first.
const std::vector<KeySection>& recovery_sections();

} // namespace twinscale::config
