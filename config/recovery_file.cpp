// Recovery files (presets/recovery/<name>.toml). Every key is described once in
// config/recovery_keys.cpp and listed in docs/keys.md ("Recovery files"); all are optional
// (defaults in faults/recovery_policy.hpp and faults/checkpoint_policy.hpp). The reader
// walks that table, table by table; the one rule spanning keys (ib_timeout or
// timeout_per_retry_s) is read by hand.
#include "config/recovery_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "config/fault_file_keys.hpp"
#include "config/presets.hpp"
#include "config/recovery_keys.hpp"
#include "config/toml_reader.hpp"
#include "faults/error.hpp"

namespace twinscale::config {

using namespace twinscale::faults;

RecoveryFile parse_recovery(std::string_view text, const std::string& file) {
  const toml::table root = parse_toml(text, file);
  TableReader t(root, file);
  RecoveryFile out;
  const std::vector<RecoveryKey>& keys = recovery_keys();
  out.policy.name = t.get_string("name", std::filesystem::path(file).stem().string());
  read_file_keys(t, "", keys, out);
  for (const KeySection& s : recovery_sections()) {
    if (s.key.empty()) continue;
    TableReader sub = t.table(s.key);
    if (s.key == "retransmit") {
      read_retransmit_keys(sub, keys, out, out.policy.retransmit);
      continue;
    }
    read_file_keys(sub, s.key, keys, out);
    sub.finish();
  }
  t.finish();
  try {
    validate_policy(out.policy);
  } catch (const FaultError& e) {
    throw ConfigError(file + ": " + e.what());
  }
  return out;
}

RecoveryFile load_recovery(const std::string& path) {
  return parse_recovery(read_config_file(path, "recovery file"), path);
}

RecoveryFile load_recovery_preset(const std::string& name) {
  RecoveryFile r = parse_recovery(preset_text("recovery", name), "preset " + name);
  if (r.policy.name == "preset " + name) r.policy.name = name;
  return r;
}

RecoveryFile resolve_recovery(const std::string& spec) {
  if (std::filesystem::is_regular_file(spec) || spec.ends_with(".toml")) return load_recovery(spec);
  return load_recovery_preset(spec);
}

} // namespace twinscale::config
