// Fault files.
//
// A fault MODEL (presets/faults/<name>.toml):
//   name = "…"                       model name (default: the file name)
//   source = "…"                     citation, copied into results
//   gpus_per_node = 8                converts rate_per_node_day
//   inter_arrival = "exponential"    or "weibull" (then weibull_shape = k > 0)
//   [observed] gpus = N, days = D    optional: lets categories give a `count` observed on
//                                    N GPUs over D days (rate = count / (N · 24 · D) per GPU-hour)
//   [[category]]                     one per fault category:
//     kind        gpu | hbm | gpu-sram | gpu-system-processor | gpu-thermal | nic |
//                 switch-cable | host | software-bug | nccl-watchdog |
//                 silent-data-corruption | link-flap | straggler | other
//     name        label as in the source table (default: kind)
//     exactly one of: count (needs [observed]) | rate_per_gpu_hour | rate_per_node_day  (> 0)
//     scope       gpu | node | nic | link | switch | software
//     effect      interrupt (default) | outage (link flap: stall or fail by the retransmit
//                 limit) | slowdown (straggler)
//     detection   explicit-error | missed-heartbeat | traffic-drop | none
//     needs_eviction   true: hardware stays faulty until evicted (default true)
//     diagnosable      P(diagnostics find it) in [0, 1] (default 1)
//     duration_s       outage / slowdown length (default 0); duration_distribution fixed | exponential
//     slowdown         slowdown only: fraction of speed lost in (0, 1)
//
// A fault PLAN (explicit timed events and the retransmit parameters): its keys are
// described once in config/fault_plan_keys.cpp and listed in docs/keys.md ("Fault plan
// files"); the reader below walks that table.
#include "config/fault_file.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "config/error.hpp"
#include "config/fault_file_keys.hpp"
#include "config/fault_plan_keys.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "faults/error.hpp"
#include "faults/fabric_targets.hpp"

namespace twinscale::config {

using namespace twinscale::faults;

namespace {

FaultCategory read_kind(TableReader& t) { return t.get_enum("kind", kFaultCategoryNames); }

double positive_rate(TableReader& t, std::string_view key) {
  const double v = t.get_double(key);
  if (!(v > 0))
    t.fail(key, "is " + std::to_string(v) + "; a rate must be > 0 (leave out a category that never happens)");
  return v;
}

FaultCategorySpec read_category(TableReader& t, const std::optional<double>& observed_gpu_hours,
                                int64_t gpus_per_node) {
  FaultCategorySpec c;
  c.category = read_kind(t);
  c.name = t.get_string("name", std::string(to_string(c.category)));
  const int given = int(t.has("count")) + int(t.has("rate_per_gpu_hour")) + int(t.has("rate_per_node_day"));
  if (given != 1)
    t.fail("rate_per_gpu_hour", "— give exactly one of count (with [observed]), rate_per_gpu_hour, rate_per_node_day");
  if (t.has("count")) {
    if (!observed_gpu_hours) t.fail("count", "needs an [observed] table (gpus, days) to become a rate");
    c.rate_per_gpu_hour = positive_rate(t, "count") / *observed_gpu_hours;
  } else if (t.has("rate_per_gpu_hour")) {
    c.rate_per_gpu_hour = positive_rate(t, "rate_per_gpu_hour");
  } else {
    c.rate_per_gpu_hour = per_gpu_hour_from_node_day(positive_rate(t, "rate_per_node_day"), gpus_per_node);
  }
  c.scope = t.get_enum("scope", kFaultScopeNames);
  c.effect = t.get_enum("effect", kFaultEffectNames, FaultEffect::Interrupt);
  c.detection = t.get_enum("detection", kDetectionSignalNames);
  c.needs_eviction = t.get_bool("needs_eviction", true);
  c.diagnosable = t.get_double("diagnosable", 1.0, 0.0, 1.0);
  c.duration_s = t.get_double("duration_s", 0.0, 0.0);
  c.duration_distribution =
      t.get_enum("duration_distribution", kDurationDistributionNames, DurationDistribution::Fixed);
  c.slowdown = t.get_double("slowdown", 0.0, 0.0, 0.999);
  t.finish();
  return c;
}

std::string read_text(const std::string& path) { return read_config_file(path, "fault file"); }

std::string file_stem(const std::string& file) { return std::filesystem::path(file).stem().string(); }

} // namespace

FaultModel parse_fault_model(std::string_view text, const std::string& file) {
  const toml::table root = parse_toml(text, file);
  TableReader t(root, file);
  FaultModel m;
  m.name = t.get_string("name", file_stem(file));
  m.source = t.get_string("source", std::string());
  m.gpus_per_node = t.get_int("gpus_per_node", 8, 1, 1024);
  m.inter_arrival = t.get_enum("inter_arrival", kInterArrivalNames, InterArrival::Exponential);
  m.weibull_shape = t.get_double("weibull_shape", 1.0, 1e-3, 100.0);
  std::optional<double> observed_gpu_hours;
  if (t.has("observed")) {
    TableReader o = t.table("observed");
    const double gpus = static_cast<double>(o.get_int("gpus", std::nullopt, 1));
    const double days = o.get_double("days", std::nullopt, 1e-6);
    o.finish();
    observed_gpu_hours = gpus * days * 24.0;
  }
  auto cats = t.table_array("category");
  if (cats.empty()) t.fail("category", "is missing: a fault model needs at least one [[category]]");
  for (auto& c : cats) m.categories.push_back(read_category(c, observed_gpu_hours, m.gpus_per_node));
  t.finish();
  try {
    validate_model(m);
  } catch (const FaultError& e) {
    throw ConfigError(file + ": " + e.what());
  }
  return m;
}

FaultModel load_fault_model(const std::string& path) { return parse_fault_model(read_text(path), path); }

FaultModel load_fault_model_preset(const std::string& name) {
  FaultModel m = parse_fault_model(preset_text("faults", name), "preset " + name);
  if (m.name == "preset " + name) m.name = name;
  return m;
}

FaultModel resolve_fault_model(const std::string& spec) {
  if (std::filesystem::is_regular_file(spec) || spec.ends_with(".toml")) return load_fault_model(spec);
  return load_fault_model_preset(spec);
}

namespace {
/// The event keys read by hand (rules spanning keys): at_s, required unless the kind lasts
/// the whole run; until_s or duration_s (not both; a link flap needs one). Type and range
/// from the table.
void read_event_time(TableReader& e, const PlanKey& f, FaultPlan& plan) {
  PlanEvent& ev = plan.events.back();
  if (f.key == "event.at_s") return read_key(e, f, plan, !ev.is_rank_specific());
  if (f.key != "event.until_s") return; // duration_s: read with until_s
  if (e.has("until_s") && e.has("duration_s")) e.fail("until_s", "and duration_s both given; give one");
  const PlanKey& duration = key_in(fault_plan_keys(), "event.duration_s");
  if (e.has("duration_s"))
    ev.until_s = ev.at_s + e.get_double("duration_s", std::nullopt, duration.num_min, duration.num_max);
  else if (e.has("until_s"))
    read_key(e, f, plan);
  else if (ev.kind == PlanEventKind::LinkFlap)
    e.fail("duration_s", "is missing: a link flap needs its duration (seconds > 0)");
}
} // namespace

FaultPlan parse_fault_plan(std::string_view text, const std::string& file) {
  const toml::table root = parse_toml(text, file);
  TableReader t(root, file);
  FaultPlan plan;
  const std::vector<PlanKey>& keys = fault_plan_keys();
  if (t.has("retransmit")) {
    TableReader r = t.table("retransmit");
    read_retransmit_keys(r, keys, plan, plan.retransmit);
  }
  for (auto& e : t.table_array("event")) {
    plan.events.emplace_back();
    // in table order, kind first; the keys of other kinds are left unread (unknown keys)
    for (const PlanKey& f : keys) {
      if (key_parent(f.key) != "event" || (f.applies != nullptr && !f.applies(plan))) continue;
      if (f.by_hand)
        read_event_time(e, f, plan);
      else
        read_file_key(e, f, plan);
    }
    e.finish();
  }
  t.finish();
  return plan;
}

FaultPlan load_fault_plan(const std::string& path) { return parse_fault_plan(read_text(path), path); }

void check_fault_plan(FaultPlan& plan, const PlanTargets& targets, const std::string& file) {
  try {
    validate_plan(plan, targets);
  } catch (const FaultError& e) {
    throw ConfigError(file + ": " + e.what());
  }
}

FaultPlan load_checked_fault_plan(const std::string& path, const topology::Fabric& fabric) {
  FaultPlan plan = load_fault_plan(path);
  check_fault_plan(plan, FabricTargets(fabric), path);
  return plan;
}

} // namespace twinscale::config
