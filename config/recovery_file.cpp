// Recovery files (presets/recovery/<name>.toml). All keys optional (defaults in
// faults/recovery_policy.hpp and faults/checkpoint_policy.hpp); times in seconds.
//   name, source                     labels
//   restart_s                        tear down, reschedule, relaunch the processes
//   load_method                      "every-rank-reads" | "reader-per-dp-group" (M16)
//   [retransmit]  ib_timeout (exponent: 4.096 µs · 2^k) | timeout_per_retry_s, retries   (M13)
//   [detection]   explicit_error_s, heartbeat_period_s, heartbeat_misses, traffic_window_s,
//                 silent_s                                                               (M14)
//   [diagnostics] duration_s, false_negative_rate, false_positive_rate, escalate_after,
//                 escalation_s, missed_fault_recurrence_s                                (M15)
//   [replacement] warm_spares, spare_swap_s, cold_replacement_s, repair_s
//   [comm_init]   method = "global-barrier" | "local-barrier", store_op_s               (M9)
//   [checkpoint]  interval_s, async_persist                                              (M16)
//   [storage]     pcie_bw_bytes_per_s (per GPU), write_bw_bytes_per_s, read_bw_bytes_per_s
//                 (aggregate), client_bw_bytes_per_s (per node), broadcast_bw_bytes_per_s (per GPU)
#include "config/recovery_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "faults/error.hpp"

namespace twinscale::config {

using namespace twinscale::faults;

namespace {
double seconds(TableReader& t, std::string_view key, double fallback) { return t.get_double(key, fallback, 0.0, 1e12); }
double bandwidth(TableReader& t, std::string_view key, double fallback) {
  const double v = t.get_double(key, fallback);
  if (!(v > 0)) t.fail(key, "must be a bandwidth > 0 bytes/s");
  return v;
}
} // namespace

RecoveryFile parse_recovery(std::string_view text, const std::string& file) {
  const toml::table root = parse_toml(text, file);
  TableReader t(root, file);
  RecoveryFile out;
  RecoveryPolicy& p = out.policy;
  p.name = t.get_string("name", std::filesystem::path(file).stem().string());
  out.source = t.get_string("source", std::string());
  p.restart_s = seconds(t, "restart_s", p.restart_s);
  p.load_method = t.get_enum<CheckpointLoadMethod>("load_method",
                                                   {{"every-rank-reads", CheckpointLoadMethod::EveryRankReads},
                                                    {"reader-per-dp-group", CheckpointLoadMethod::ReaderPerDpGroup}},
                                                   p.load_method);
  {
    TableReader r = t.table("retransmit");
    read_retransmit(r, p.retransmit);
  }
  {
    TableReader d = t.table("detection");
    auto& x = p.detection;
    x.explicit_error_s = seconds(d, "explicit_error_s", x.explicit_error_s);
    x.heartbeat_period_s = d.get_double("heartbeat_period_s", x.heartbeat_period_s, 1e-6);
    x.heartbeat_misses = d.get_int("heartbeat_misses", x.heartbeat_misses, 1, 1000);
    x.traffic_window_s = seconds(d, "traffic_window_s", x.traffic_window_s);
    x.silent_s = seconds(d, "silent_s", x.silent_s);
    d.finish();
  }
  {
    TableReader d = t.table("diagnostics");
    auto& x = p.diagnostics;
    x.duration_s = seconds(d, "duration_s", x.duration_s);
    x.false_negative_rate = d.get_double("false_negative_rate", x.false_negative_rate, 0.0, 1.0);
    x.false_positive_rate = d.get_double("false_positive_rate", x.false_positive_rate, 0.0, 1.0);
    x.escalate_after = d.get_int("escalate_after", x.escalate_after, 1, 1000);
    x.escalation_s = seconds(d, "escalation_s", x.escalation_s);
    x.missed_fault_recurrence_s = seconds(d, "missed_fault_recurrence_s", x.missed_fault_recurrence_s);
    d.finish();
  }
  {
    TableReader r = t.table("replacement");
    auto& x = p.replacement;
    x.warm_spares = r.get_int("warm_spares", x.warm_spares, 0, 1000000);
    x.spare_swap_s = seconds(r, "spare_swap_s", x.spare_swap_s);
    x.cold_replacement_s = seconds(r, "cold_replacement_s", x.cold_replacement_s);
    x.repair_s = seconds(r, "repair_s", x.repair_s);
    r.finish();
  }
  {
    TableReader c = t.table("comm_init");
    p.comm_init.method = c.get_enum<CommInitMethod>(
        "method",
        {{"global-barrier", CommInitMethod::GlobalBarrierPerGroup}, {"local-barrier", CommInitMethod::LocalBarrier}},
        p.comm_init.method);
    p.comm_init.store_op_s = seconds(c, "store_op_s", p.comm_init.store_op_s);
    c.finish();
  }
  {
    TableReader c = t.table("checkpoint");
    const double interval = c.get_double("interval_s", out.checkpoint.interval_s);
    if (!(interval > 0)) c.fail("interval_s", "must be > 0 seconds of training between checkpoints");
    out.checkpoint.interval_s = interval;
    out.checkpoint.async_persist = c.get_bool("async_persist", out.checkpoint.async_persist);
    c.finish();
  }
  {
    TableReader s = t.table("storage");
    auto& x = out.checkpoint.storage;
    x.pcie_bw_bytes_per_s = bandwidth(s, "pcie_bw_bytes_per_s", x.pcie_bw_bytes_per_s);
    x.write_bw_bytes_per_s = bandwidth(s, "write_bw_bytes_per_s", x.write_bw_bytes_per_s);
    x.read_bw_bytes_per_s = bandwidth(s, "read_bw_bytes_per_s", x.read_bw_bytes_per_s);
    x.client_bw_bytes_per_s = bandwidth(s, "client_bw_bytes_per_s", x.client_bw_bytes_per_s);
    x.broadcast_bw_bytes_per_s = bandwidth(s, "broadcast_bw_bytes_per_s", x.broadcast_bw_bytes_per_s);
    s.finish();
  }
  t.finish();
  try {
    validate_policy(p);
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
