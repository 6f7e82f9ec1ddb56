// Fault files: TOML → faults::FaultModel (statistical categories; keys documented in
// fault_file.cpp) and faults::FaultPlan (explicit timed events; keys in docs/keys.md,
// "Fault plan files", generated from config/fault_plan_keys.cpp).
#pragma once

#include <string>
#include <string_view>

#include "config/toml_reader.hpp"
#include "faults/fault_model.hpp"
#include "faults/fault_plan.hpp"
#include "faults/plan_targets.hpp"
#include "topology/fabric.hpp"

namespace twinscale::config {

/// Parses a fault model; `file` names the source in messages. Throws ConfigError for
/// syntax errors, unknown keys, wrong types, missing or non-positive rates, and any
/// violation faults::validate_model finds (prefixed with the file).
faults::FaultModel parse_fault_model(std::string_view text, const std::string& file);
faults::FaultModel load_fault_model(const std::string& path);
faults::FaultModel load_fault_model_preset(const std::string& name);
/// `spec` is a path if it names an existing file or ends in ".toml", else a preset name.
faults::FaultModel resolve_fault_model(const std::string& spec);

/// Parses a fault plan (events and retransmit parameters) through its key table: unknown
/// keys, wrong types and out-of-range values are ConfigErrors naming the file and the key.
/// Names are not resolved here: call check_fault_plan with the cluster's targets.
faults::FaultPlan parse_fault_plan(std::string_view text, const std::string& file);
faults::FaultPlan load_fault_plan(const std::string& path);
/// faults::validate_plan, with FaultErrors turned into ConfigErrors naming `file`.
void check_fault_plan(faults::FaultPlan& plan, const faults::PlanTargets& targets, const std::string& file);
/// load_fault_plan + check_fault_plan against the fabric's link, GPU and server names:
/// the one call an executor needs (events sorted, names resolved to indices).
faults::FaultPlan load_checked_fault_plan(const std::string& path, const topology::Fabric& fabric);

} // namespace twinscale::config
