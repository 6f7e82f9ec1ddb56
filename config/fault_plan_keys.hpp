// The fault plan file's keys, each described once (common/key_schema.hpp): the fault plan
// reader (config/fault_file.cpp) and the key reference docs/keys.md are derived from this
// table.
//
// A plan is a [retransmit] table and an array of [[event]] tables. The event keys are the
// keys of one entry: their members are those of the plan's last event (the one being
// read), and `only_when` says which event kinds take a key (a key of another kind is an
// unknown key). Adding an event key: the member in faults/fault_plan.hpp (PlanEvent), one
// entry in fault_plan_keys.cpp, then regenerate the reference:
// build/config/twinscale_keys_doc > docs/keys.md.
#pragma once

#include <vector>

#include "common/key_schema.hpp"
#include "faults/fault_plan.hpp"

namespace twinscale::config {

using PlanKey = KeyField<faults::FaultPlan>;

/// Every fault plan key, in the order the reference lists them and the reader reads them.
const std::vector<PlanKey>& fault_plan_keys();
/// The tables of a fault plan: [retransmit] and the [[event]] array.
const std::vector<KeySection>& fault_plan_sections();

} // namespace twinscale::config
