// Every fault plan and recovery file the project ships (examples/, presets/recovery/, the
// fuzz corpus, experiments/) and test files using every reader path load to the same
// faults::FaultPlan and RecoveryFile as recorded in tests/config/data/shipped_fault_files.txt:
// a dump of every field, numbers to 17 digits. The reader may change; what a valid file
// means may not.
//
// The record is written by the reader it guards; after an intended change of meaning,
// rewrite it with TWINSCALE_WRITE_FAULT_FILES_DUMP=PATH build/tests/test_config "[shipped-fault-files]".
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "config/fault_file.hpp"
#include "config/recovery_file.hpp"
#include "tests/config/record_file.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
using twinscale::test::Dump;

namespace {

void dump_retransmit(Dump& d, const faults::RetransmitPolicy& r) {
  d.add("retransmit.timeout_per_retry_s", r.timeout_per_retry_s);
  d.add("retransmit.retries", r.retries);
}

std::string dump(const faults::FaultPlan& plan) {
  Dump d;
  dump_retransmit(d, plan.retransmit);
  for (size_t i = 0; i < plan.events.size(); ++i) {
    const faults::PlanEvent& e = plan.events[i];
    const std::string at = "event[" + std::to_string(i) + "].";
    d.add(at + "kind", std::string(faults::to_string(e.kind)));
    d.add(at + "target", e.target);
    d.add(at + "target_index", e.target_index);
    d.add(at + "at_s", e.at_s);
    d.add(at + "until_s", e.until_s);
    d.add(at + "slowdown", e.slowdown);
    d.add(at + "bandwidth_factor", e.bandwidth_factor);
    d.add(at + "probability", e.probability);
    d.add(at + "delay_s", e.delay_s);
    d.add(at + "seed", e.seed);
  }
  return d.out;
}

std::string dump(const config::RecoveryFile& r) {
  const faults::RecoveryPolicy& p = r.policy;
  Dump d;
  d.add("name", p.name);
  d.add("source", r.source);
  d.add("restart_s", p.restart_s);
  d.add("load_method", std::string(faults::to_string(p.load_method)));
  dump_retransmit(d, p.retransmit);
  d.add("detection.explicit_error_s", p.detection.explicit_error_s);
  d.add("detection.heartbeat_period_s", p.detection.heartbeat_period_s);
  d.add("detection.heartbeat_misses", p.detection.heartbeat_misses);
  d.add("detection.traffic_window_s", p.detection.traffic_window_s);
  d.add("detection.silent_s", p.detection.silent_s);
  d.add("diagnostics.duration_s", p.diagnostics.duration_s);
  d.add("diagnostics.false_negative_rate", p.diagnostics.false_negative_rate);
  d.add("diagnostics.false_positive_rate", p.diagnostics.false_positive_rate);
  d.add("diagnostics.escalate_after", p.diagnostics.escalate_after);
  d.add("diagnostics.escalation_s", p.diagnostics.escalation_s);
  d.add("diagnostics.missed_fault_recurrence_s", p.diagnostics.missed_fault_recurrence_s);
  d.add("replacement.warm_spares", p.replacement.warm_spares);
  d.add("replacement.spare_swap_s", p.replacement.spare_swap_s);
  d.add("replacement.cold_replacement_s", p.replacement.cold_replacement_s);
  d.add("replacement.repair_s", p.replacement.repair_s);
  d.add("comm_init.method", std::string(faults::to_string(p.comm_init.method)));
  d.add("comm_init.store_op_s", p.comm_init.store_op_s);
  d.add("checkpoint.interval_s", r.checkpoint.interval_s);
  d.add("checkpoint.async_persist", r.checkpoint.async_persist);
  const faults::StorageSpec& s = r.checkpoint.storage;
  d.add("storage.pcie_bw_bytes_per_s", s.pcie_bw_bytes_per_s);
  d.add("storage.write_bw_bytes_per_s", s.write_bw_bytes_per_s);
  d.add("storage.read_bw_bytes_per_s", s.read_bw_bytes_per_s);
  d.add("storage.client_bw_bytes_per_s", s.client_bw_bytes_per_s);
  d.add("storage.broadcast_bw_bytes_per_s", s.broadcast_bw_bytes_per_s);
  return d.out;
}

/// The .toml files of `dir` (relative to the source root), sorted.
std::vector<std::string> tomls_in(const std::string& dir) {
  const fs::path root(TWINSCALE_SOURCE_DIR);
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(root / dir))
    if (e.path().extension() == ".toml") out.push_back(fs::relative(e.path(), root).string());
  std::sort(out.begin(), out.end());
  return out;
}

bool has_line(const fs::path& path, const std::string& wanted) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line))
    if (line == wanted) return true;
  return false;
}

/// Fault plans: the example, the fuzz corpus, every experiment TOML with an [[event]]
/// table and the test plans of tests/config/data/.
std::vector<std::string> shipped_plans() {
  const fs::path root(TWINSCALE_SOURCE_DIR);
  std::vector<std::string> out = tomls_in("fuzz/corpus/fault_toml");
  out.push_back("examples/plan.toml");
  for (const auto& e : fs::recursive_directory_iterator(root / "experiments"))
    if (e.path().extension() == ".toml" && has_line(e.path(), "[[event]]"))
      out.push_back(fs::relative(e.path(), root).string());
  for (const std::string& f : tomls_in("tests/config/data"))
    if (f.find("_plan") != std::string::npos) out.push_back(f);
  std::sort(out.begin(), out.end());
  return out;
}

/// Recovery files: the presets and the test files of tests/config/data/.
std::vector<std::string> shipped_recovery_files() {
  std::vector<std::string> out = tomls_in("presets/recovery");
  for (const std::string& f : tomls_in("tests/config/data"))
    if (f.find("_recovery") != std::string::npos) out.push_back(f);
  std::sort(out.begin(), out.end());
  return out;
}

} // namespace

TEST_CASE("every shipped fault plan and recovery file loads to the recorded spec", "[config][shipped-fault-files]") {
  const fs::path root(TWINSCALE_SOURCE_DIR);
  const std::vector<std::string> plans = shipped_plans(), recoveries = shipped_recovery_files();
  REQUIRE(plans.size() >= 3);
  REQUIRE(recoveries.size() >= 4);
  std::map<std::string, std::string> now;
  for (const std::string& f : plans) now[f] = dump(config::load_fault_plan((root / f).string()));
  for (const std::string& f : recoveries) now[f] = dump(config::load_recovery((root / f).string()));
  test::check_against_record(now, root / "tests/config/data/shipped_fault_files.txt",
                             "TWINSCALE_WRITE_FAULT_FILES_DUMP");
}
