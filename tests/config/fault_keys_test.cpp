// The key tables of fault plans and recovery files (config/fault_plan_keys.cpp,
// config/recovery_keys.cpp) and the readers that walk them: every key of each table,
// given a value of the wrong type or out of its range, is refused with a message naming
// the file and the full key; unknown keys name the valid ones.
#include <catch2/catch.hpp>

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "common/key_reference.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/fault_plan_keys.hpp"
#include "config/recovery_file.hpp"
#include "config/recovery_keys.hpp"

using namespace twinscale;

namespace {

/// A value of another type than the key's.
std::string wrong_type(KeyType type) {
  switch (type) {
  case KeyType::String: return "1";
  case KeyType::Name: return "\"no-such-name\"";
  default: return "\"text\"";
  }
}

/// A value just outside the key's range, or "" when the type takes every value.
template <class Spec>
std::string out_of_range(const KeyField<Spec>& f) {
  if (f.type == KeyType::Integer && f.int_min > std::numeric_limits<int64_t>::min())
    return std::to_string(f.int_min - 1);
  if (f.type == KeyType::Number && f.num_min > -1e300) return f.num_min > 0 ? "0" : "-1";
  return "";
}

/// A minimal valid [[event]] of each kind, leaf → value; link-down first (it takes until_s
/// and duration_s and states neither).
const std::vector<std::map<std::string, std::string>>& base_events() {
  static const std::vector<std::map<std::string, std::string>> events = {
      {{"kind", "\"link-down\""}, {"link", "\"l\""}, {"at_s", "1"}},
      {{"kind", "\"link-flap\""}, {"link", "\"l\""}, {"at_s", "1"}, {"duration_s", "1"}},
      {{"kind", "\"gpu-slowdown\""}, {"gpu", "\"g\""}, {"at_s", "1"}, {"slowdown", "0.1"}},
      {{"kind", "\"server-crash\""}, {"server", "\"s\""}, {"at_s", "1"}},
      {{"kind", "\"link-degraded\""}, {"link", "\"l\""}, {"bandwidth_factor", "0.5"}},
      {{"kind", "\"jitter\""}, {"gpu", "\"g\""}, {"probability", "0.5"}, {"delay_s", "0.1"}},
  };
  return events;
}

/// A plan whose one event is the first base event taking `f`, with `f` set to `value`.
std::string plan_with(const config::PlanKey& f, const std::string& value) {
  const std::string leaf(key_leaf(f.key));
  if (key_parent(f.key) == "retransmit") return "[retransmit]\n" + leaf + " = " + value + "\n";
  for (const auto& base : base_events()) {
    faults::FaultPlan probe;
    probe.events.emplace_back();
    probe.events.back().kind =
        *enum_from_name(faults::kPlanEventKindNames, base.at("kind").substr(1, base.at("kind").size() - 2));
    if (f.applies != nullptr && !f.applies(probe)) continue;
    auto event = base;
    event[leaf] = value;
    std::string text = "[[event]]\n";
    for (const auto& [k, v] : event) text += k + " = " + v + "\n";
    return text;
  }
  FAIL("no event kind takes " << f.key);
  return "";
}

/// The TOML of a recovery file stating only `f` = `value`.
std::string recovery_with(const config::RecoveryKey& f, const std::string& value) {
  const std::string section(key_parent(f.key)), leaf(key_leaf(f.key));
  return (section.empty() ? "" : "[" + section + "]\n") + leaf + " = " + value + "\n";
}

std::string error_of(const std::function<void()>& parse) {
  try {
    parse();
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "(accepted)";
}

} // namespace

TEST_CASE("fault plan keys: a bad value of each key is refused naming the file and the key", "[config][fault-keys]") {
  for (const config::PlanKey& f : config::fault_plan_keys()) {
    INFO(f.key);
    // the [[event]] entry is "event[0]" in messages
    const std::string full = key_parent(f.key) == "event" ? "event[0]." + std::string(key_leaf(f.key)) : f.key;
    const std::string bad = error_of([&] { config::parse_fault_plan(plan_with(f, wrong_type(f.type)), "p.toml"); });
    CHECK_THAT(bad, Catch::StartsWith("p.toml: key '" + full + "'"));
    if (const std::string v = out_of_range(f); !v.empty()) {
      const std::string range = error_of([&] { config::parse_fault_plan(plan_with(f, v), "p.toml"); });
      CHECK_THAT(range, Catch::StartsWith("p.toml: key '" + full + "' is "));
    }
  }
}

TEST_CASE("recovery keys: a bad value of each key is refused naming the file and the key", "[config][fault-keys]") {
  for (const config::RecoveryKey& f : config::recovery_keys()) {
    INFO(f.key);
    const std::string bad = error_of([&] { config::parse_recovery(recovery_with(f, wrong_type(f.type)), "r.toml"); });
    CHECK_THAT(bad, Catch::StartsWith("r.toml: key '" + f.key + "'"));
    if (const std::string v = out_of_range(f); !v.empty()) {
      const std::string range = error_of([&] { config::parse_recovery(recovery_with(f, v), "r.toml"); });
      CHECK_THAT(range, Catch::StartsWith("r.toml: key '" + f.key + "' is " + v + "; must be "));
    }
  }
}

TEST_CASE("fault file keys: messages say what is valid", "[config][fault-keys]") {
  CHECK_THROWS_WITH(config::parse_recovery("[storage]\nwrite_bw_bytes_per_s = 0\n", "r.toml"),
                    "r.toml: key 'storage.write_bw_bytes_per_s' is 0; must be > 0 bytes/s");
  CHECK_THROWS_WITH(config::parse_recovery("[checkpoint]\ninterval_s = -5\n", "r.toml"),
                    "r.toml: key 'checkpoint.interval_s' is -5; must be > 0 s");
  CHECK_THROWS_WITH(config::parse_recovery("[retransmit]\nib_timeout = 40\n", "r.toml"),
                    "r.toml: key 'retransmit.ib_timeout' is 40; must be in [1, 31]");
  CHECK_THROWS_WITH(config::parse_recovery("load_method = \"all\"\n", "r.toml"),
                    Catch::Contains("valid values: every-rank-reads, reader-per-dp-group"));
  CHECK_THROWS_WITH(config::parse_recovery("[detection]\nheartbeat = 3\n", "r.toml"),
                    Catch::Contains("unknown key 'detection.heartbeat'") && Catch::Contains("heartbeat_period_s") &&
                        Catch::Contains("silent_s"));
  CHECK_THROWS_WITH(config::parse_fault_plan("[retransmit]\nib_timeout = 20\ntimeout_per_retry_s = 1\n", "p.toml"),
                    Catch::Contains("both given"));
  CHECK_THROWS_WITH(
      config::parse_fault_plan("[[event]]\nkind = \"server-crash\"\nserver = \"s\"\nat_s = 1\nuntil_s = 2\n", "p.toml"),
      Catch::Contains("unknown key 'event[0].until_s'"));
  CHECK_THROWS_WITH(config::parse_fault_plan("[[event]]\nkind = \"jitter\"\ngpu = \"g\"\nprobability = 0.5\n"
                                             "delay_s = 0.1\nseed = -1\n",
                                             "p.toml"),
                    "p.toml: key 'event[0].seed' is -1; must be in [0, ∞]");
}

TEST_CASE("fault file keys: the tables give every key a doc and the reference lists them", "[config][fault-keys]") {
  const std::string plan =
      key_reference_markdown("Fault plan files", "", config::fault_plan_sections(), config::fault_plan_keys());
  for (const config::PlanKey& f : config::fault_plan_keys()) {
    INFO(f.key);
    CHECK_FALSE(f.doc.empty());
    CHECK_THAT(plan, Catch::Contains("| `" + f.key + "` |"));
  }
  const std::string recovery =
      key_reference_markdown("Recovery files", "", config::recovery_sections(), config::recovery_keys());
  for (const config::RecoveryKey& f : config::recovery_keys()) {
    INFO(f.key);
    CHECK_FALSE(f.doc.empty());
    CHECK_THAT(recovery, Catch::Contains("| `" + f.key + "` |"));
  }
}
