// Recovery files: TOML → faults::RecoveryPolicy + faults::CheckpointPolicy (the two are
// written together: a recovery preset describes one operating practice). Every key is
// listed in docs/keys.md ("Recovery files"), generated from config/recovery_keys.cpp.
#pragma once

#include <string>
#include <string_view>

#include "faults/checkpoint_policy.hpp"
#include "faults/recovery_policy.hpp"

namespace twinscale::config {

struct RecoveryFile {
  faults::RecoveryPolicy policy;
  faults::CheckpointPolicy checkpoint;
  std::string source; // citation / assumptions note, copied into results
};

/// Throws ConfigError (syntax, unknown key, wrong type or range, and anything
/// faults::validate_policy rejects, prefixed with the file).
RecoveryFile parse_recovery(std::string_view text, const std::string& file);
RecoveryFile load_recovery(const std::string& path);
RecoveryFile load_recovery_preset(const std::string& name);
/// `spec` is a path if it names an existing file or ends in ".toml", else a preset name.
RecoveryFile resolve_recovery(const std::string& spec);

} // namespace twinscale::config
