#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/fault_file.hpp"
#include "config/presets.hpp"
#include "config/recovery_file.hpp"
#include "faults/campaign.hpp"
#include "faults/fabric_targets.hpp"
#include "faults/plan_timeline.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
using config::ConfigError;

TEST_CASE("fault files: the Llama 3 preset reproduces the paper's interruption rate", "[faults][config]") {
  const auto m = config::load_fault_model_preset("llama3-405b");
  CHECK(m.name == "llama3-405b");
  REQUIRE(m.categories.size() == 15);
  // 419 unexpected interruptions in 54 days on 16,384 GPUs: one every 3.09 h.
  CHECK(m.interrupt_mtbf_s(16384) / 3600 == Approx(54.0 * 24 / 419).epsilon(1e-9));
  CHECK(m.categories[0].rate_per_gpu_hour == Approx(148.0 / (16384.0 * 54 * 24)));
  CHECK(m.categories[13].effect == faults::FaultEffect::Outage);
  CHECK(m.categories[14].effect == faults::FaultEffect::Slowdown);
  // Scaled to 12,288 GPUs: 3/4 of the rate.
  CHECK(m.interrupt_rate_per_hour(12288) == Approx(0.75 * m.interrupt_rate_per_hour(16384)));
  const auto rsc = config::load_fault_model_preset("meta-rsc1");
  CHECK(rsc.categories[0].rate_per_gpu_hour == Approx(0.0065 / 24 / 8));
}

TEST_CASE("fault files: recovery presets", "[faults][config]") {
  const auto base = config::load_recovery_preset("megatron-baseline");
  const auto ms = config::load_recovery_preset("megascale");
  CHECK(base.policy.name == "megatron-baseline");
  CHECK(ms.policy.comm_init.method == faults::CommInitMethod::LocalBarrier);
  CHECK(base.policy.retransmit.tolerated_outage_s() < 1.0);
  CHECK(ms.policy.retransmit.tolerated_outage_s() > 20.0);
  const topology::JobShape s2048{8, 32, 8};
  CHECK(faults::comm_init_s(base.policy.comm_init, s2048) == Approx(1047).epsilon(0.001));
  CHECK(faults::comm_init_s(ms.policy.comm_init, s2048) < 5.0);
  CHECK_FALSE(base.checkpoint.async_persist);
  CHECK(ms.checkpoint.async_persist);
  CHECK(config::preset_names("recovery").size() >= 2);
}

TEST_CASE("fault files: a fault plan parses and validates against names", "[faults][config][plan]") {
  auto plan = config::parse_fault_plan(R"(
[retransmit]
ib_timeout = 20
retries = 7

[[event]]
kind = "link-flap"
link = "tor0-agg1"
at_s = 120
duration_s = 3

[[event]]
kind = "gpu-slowdown"
gpu = "server1.gpu3"
at_s = 10
until_s = 60
slowdown = 0.1

[[event]]
kind = "server-crash"
server = "server1"
at_s = 500

[[event]]
kind = "link-down"
link = "tor0-agg0"
at_s = 200
)",
                                       "plan.toml");
  CHECK(plan.retransmit.timeout_per_retry_s == Approx(4.294967296));
  REQUIRE(plan.events.size() == 4);
  faults::NamedTargets targets({"tor0-agg0", "tor0-agg1"}, {"server0.gpu0", "server1.gpu3"}, {"server0", "server1"});
  config::check_fault_plan(plan, targets, "plan.toml");
  CHECK(plan.events[0].kind == faults::PlanEventKind::GpuSlowdown);
  CHECK(plan.events[1].target_index == 1);
  CHECK(std::isinf(plan.events[2].until_s)); // link-down with no end: for good
  CHECK(faults::outage_outcome(plan.events[1].duration_s(), plan.retransmit) == faults::OutageOutcome::Stall);
}

TEST_CASE("fault files: bad plans are errors naming the file and event", "[faults][config][plan][errors]") {
  faults::NamedTargets targets({"tor0-agg0"}, {"server0.gpu0"}, {"server0"});
  auto plan = config::parse_fault_plan("[[event]]\nkind = \"link-down\"\nlink = \"spine9\"\nat_s = 5\n", "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"),
                    Catch::Contains("p.toml") && Catch::Contains("event[0]") &&
                        Catch::Contains("unknown link name 'spine9'") && Catch::Contains("tor0-agg0"));
  plan = config::parse_fault_plan("[[event]]\nkind = \"gpu-slowdown\"\ngpu = \"gpu9\"\nat_s = 5\nslowdown = 0.1\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"),
                    Catch::Contains("unknown GPU name 'gpu9'") && Catch::Contains("server0.gpu0"));
  plan = config::parse_fault_plan("[[event]]\nkind = \"link-down\"\nlink = \"tor0-agg0\"\nat_s = 5\n"
                                  "[[event]]\nkind = \"link-flap\"\nlink = \"tor0-agg0\"\nat_s = 50\nduration_s = 2\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"), Catch::Contains("already out"));
  CHECK_THROWS_WITH(config::parse_fault_plan("[[event]]\nkind = \"link-flap\"\nlink = \"x\"\nat_s = 5\n", "p.toml"),
                    Catch::Contains("p.toml") && Catch::Contains("duration_s") && Catch::Contains("is missing"));
  CHECK_THROWS_WITH(
      config::parse_fault_plan("[[event]]\nkind = \"link-flap\"\ngpu = \"x\"\nlink = \"y\"\nat_s = 5\nduration_s = 1\n",
                               "p.toml"),
      Catch::Contains("unknown key 'event[0].gpu'"));
  CHECK_THROWS_WITH(config::parse_fault_plan("[[event]]\nkind = \"link-melt\"\n", "p.toml"),
                    Catch::Contains("valid values: link-flap, link-down, gpu-slowdown, server-crash"));
}

TEST_CASE("fault files: zero, negative and ambiguous rates are errors", "[faults][config][errors]") {
  const std::string head =
      "name = \"m\"\n[[category]]\nkind = \"gpu\"\nscope = \"gpu\"\ndetection = \"explicit-error\"\n";
  CHECK_THROWS_WITH(config::parse_fault_model(head + "rate_per_gpu_hour = 0\n", "m.toml"),
                    Catch::Contains("m.toml") && Catch::Contains("category[0].rate_per_gpu_hour") &&
                        Catch::Contains("must be > 0"));
  CHECK_THROWS_WITH(config::parse_fault_model(head + "rate_per_node_day = -0.5\n", "m.toml"),
                    Catch::Contains("rate_per_node_day") && Catch::Contains("must be > 0"));
  CHECK_THROWS_WITH(config::parse_fault_model(head + "rate_per_node_day = 1\nrate_per_gpu_hour = 1\n", "m.toml"),
                    Catch::Contains("exactly one of"));
  CHECK_THROWS_WITH(config::parse_fault_model(head + "count = 3\n", "m.toml"), Catch::Contains("[observed]"));
  CHECK_THROWS_WITH(
      config::parse_fault_model(head + "rate_per_gpu_hour = 1e-6\neffect = \"slowdown\"\nduration_s = 10\n", "m.toml"),
      Catch::Contains("m.toml") && Catch::Contains("slowdown"));
  CHECK_THROWS_WITH(config::parse_fault_model("name = \"m\"\n", "m.toml"),
                    Catch::Contains("at least one [[category]]"));
  CHECK_THROWS_WITH(config::load_fault_model_preset("nope"), Catch::Contains("llama3-405b"));
  CHECK_THROWS_WITH(config::parse_recovery("[diagnostics]\nfalse_positive_rate = 2\n", "r.toml"),
                    Catch::Contains("r.toml") && Catch::Contains("diagnostics.false_positive_rate"));
  CHECK_THROWS_WITH(config::parse_recovery("[checkpoint]\ninterval_s = 0\n", "r.toml"),
                    Catch::Contains("checkpoint.interval_s"));
  CHECK_THROWS_WITH(config::parse_recovery("[storage]\nread_bw_bytes_per_s = 0\n", "r.toml"),
                    Catch::Contains("storage.read_bw_bytes_per_s"));
  CHECK_THROWS_WITH(config::parse_recovery("[comm_init]\nmethod = \"fast\"\n", "r.toml"),
                    Catch::Contains("global-barrier, local-barrier"));
}

TEST_CASE("fault files: a plan validates against a real fabric's names", "[faults][config][plan]") {
  const topology::Fabric fabric(config::load_cluster("tiny-2tier"));
  faults::FabricTargets targets(fabric);
  const std::string link = fabric.link_name(static_cast<uint32_t>(fabric.links().size() - 1));
  const std::string gpu = fabric.gpu_name(3);
  const std::string server = fabric.server_name(1);
  auto plan = config::parse_fault_plan("[[event]]\nkind = \"link-flap\"\nlink = \"" + link +
                                           "\"\nat_s = 120\nduration_s = 3\n"
                                           "[[event]]\nkind = \"gpu-slowdown\"\ngpu = \"" +
                                           gpu +
                                           "\"\nat_s = 1\nslowdown = 0.1\n"
                                           "[[event]]\nkind = \"server-crash\"\nserver = \"" +
                                           server + "\"\nat_s = 9\n",
                                       "plan.toml");
  config::check_fault_plan(plan, targets, "plan.toml");
  CHECK(plan.events[0].target_index == 3);
  CHECK(plan.events[1].target_index == 1);
  CHECK(plan.events[2].target_index == static_cast<int64_t>(fabric.links().size() - 1));
  auto bad =
      config::parse_fault_plan("[[event]]\nkind = \"link-down\"\nlink = \"tor99-spine99\"\nat_s = 1\n", "plan.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(bad, targets, "plan.toml"),
                    Catch::Contains("unknown link name 'tor99-spine99'") && Catch::Contains(fabric.link_name(0)) &&
                        Catch::Contains(link));
  bad = config::parse_fault_plan("[[event]]\nkind = \"server-crash\"\nserver = \"node7\"\nat_s = 1\n", "plan.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(bad, targets, "plan.toml"),
                    Catch::Contains("unknown server name 'node7'") && Catch::Contains("server0"));
}

TEST_CASE("fault files: load_checked_fault_plan reads a file and resolves fabric names", "[faults][config][plan]") {
  const topology::Fabric fabric(config::load_cluster("tiny-2tier"));
  const auto path = twinscale::test::scratch_dir("fault-plan") / "plan.toml";
  {
    std::ofstream f(path);
    f << "[retransmit]\nib_timeout = 20\nretries = 7\n[[event]]\nkind = \"link-flap\"\nlink = \"" << fabric.link_name(5)
      << "\"\nat_s = 120\nduration_s = 3\n";
  }
  const auto plan = config::load_checked_fault_plan(path.string(), fabric);
  REQUIRE(plan.events.size() == 1);
  CHECK(plan.events[0].target_index == 5);
  std::filesystem::remove(path);
  CHECK_THROWS_WITH(config::load_checked_fault_plan("/nonexistent/plan.toml", fabric), Catch::Contains("cannot open"));
}

TEST_CASE("fault files: link-degraded and jitter events, validated", "[faults][config][plan]") {
  faults::NamedTargets targets({"tor0-agg0", "tor0-agg1"}, {"server0.gpu0", "server1.gpu3"}, {"server0"});
  auto plan = config::parse_fault_plan(R"([[event]]
kind = "link-degraded"
link = "tor0-agg1"
bandwidth_factor = 0.25

[[event]]
kind = "jitter"
gpu = "server1.gpu3"
probability = 0.2
delay_s = 0.05
seed = 9
)",
                                       "plan.toml");
  config::check_fault_plan(plan, targets, "plan.toml");
  REQUIRE(plan.events.size() == 2);
  CHECK(faults::only_rank_specific_events(plan));
  const auto& d = plan.events[0].kind == faults::PlanEventKind::LinkDegraded ? plan.events[0] : plan.events[1];
  const auto& j = plan.events[0].kind == faults::PlanEventKind::Jitter ? plan.events[0] : plan.events[1];
  CHECK(d.target_index == 1);
  CHECK(d.bandwidth_factor == 0.25);
  CHECK(std::isinf(d.until_s));
  CHECK(j.target_index == 1);
  CHECK(j.probability == 0.2);
  CHECK(j.delay_s == 0.05);
  CHECK(j.seed == 9);
}

TEST_CASE("fault files: bad link-degraded and jitter events name the key and the valid values",
          "[faults][config][plan][errors]") {
  faults::NamedTargets targets({"tor0-agg0"}, {"server0.gpu0"}, {"server0"});
  CHECK_THROWS_WITH(
      config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\nbandwidth_factor = 1.5\n",
                               "p.toml"),
      Catch::Contains("p.toml") && Catch::Contains("bandwidth_factor"));
  CHECK_THROWS_WITH(config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n", "p.toml"),
                    Catch::Contains("bandwidth_factor") && Catch::Contains("missing"));
  CHECK_THROWS_WITH(
      config::parse_fault_plan("[[event]]\nkind = \"jitter\"\ngpu = \"server0.gpu0\"\nprobability = 0.5\n", "p.toml"),
      Catch::Contains("delay_s"));
  CHECK_THROWS_WITH(
      config::parse_fault_plan("[[event]]\nkind = \"jitter\"\ngpu = \"server0.gpu0\"\nprobability = 0\ndelay_s = 0.1\n",
                               "p.toml"),
      Catch::Contains("probability"));
  auto plan = config::parse_fault_plan(
      "[[event]]\nkind = \"jitter\"\ngpu = \"server0.gpu0\"\nprobability = 0.5\ndelay_s = 0.1\nat_s = 5\n", "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"),
                    Catch::Contains("p.toml") && Catch::Contains("event[0]") && Catch::Contains("whole run"));
  plan = config::parse_fault_plan("[[event]]\nkind = \"jitter\"\ngpu = \"server0.gpu0\"\nprobability = 0.5\n"
                                  "delay_s = 0.1\n[[event]]\nkind = \"jitter\"\ngpu = \"server0.gpu0\"\n"
                                  "probability = 0.1\ndelay_s = 0.2\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"), Catch::Contains("already has a jitter event"));
  plan = config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor9\"\nbandwidth_factor = 0.5\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"), Catch::Contains("unknown link name 'tor9'"));
}

TEST_CASE("fault files: link-degraded time windows, overlapping windows on one link name both events",
          "[faults][config][plan][errors]") {
  faults::NamedTargets targets({"tor0-agg0", "tor0-agg1"}, {"server0.gpu0"}, {"server0"});
  auto plan = config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n"
                                       "bandwidth_factor = 0.5\nat_s = 2\nuntil_s = 3\n"
                                       "[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n"
                                       "bandwidth_factor = 0.25\nat_s = 3\nduration_s = 4\n"
                                       "[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg1\"\n"
                                       "bandwidth_factor = 0.5\nat_s = 1\n",
                                       "p.toml");
  config::check_fault_plan(plan, targets, "p.toml"); // back to back on one link, and another link: fine
  REQUIRE(plan.events.size() == 3);
  CHECK(plan.events[0].at_s == 1); // sorted by start
  CHECK(std::isinf(plan.events[0].until_s));
  CHECK(plan.events[1].at_s == 2);
  CHECK(plan.events[1].until_s == 3);
  CHECK(plan.events[2].until_s == 7);
  const auto timeline = faults::plan_timeline(plan);
  REQUIRE(timeline.size() == 5); // three starts, two finite ends
  CHECK(timeline[2].at_s == 3);
  CHECK(timeline[2].kind == faults::ChangeKind::LinkBandwidth);
  CHECK(timeline[2].ends_event); // at one time, the end comes before the start
  CHECK(timeline[2].speed_factor == 1.0);
  CHECK(timeline[3].speed_factor == 0.25);

  plan = config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n"
                                  "bandwidth_factor = 0.5\nat_s = 2\nuntil_s = 5\n"
                                  "[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n"
                                  "bandwidth_factor = 0.25\nat_s = 4\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"),
                    Catch::Contains("p.toml") && Catch::Contains("event[1]") && Catch::Contains("event[0]") &&
                        Catch::Contains("already degraded") && Catch::Contains("tor0-agg0"));
  plan = config::parse_fault_plan("[[event]]\nkind = \"link-degraded\"\nlink = \"tor0-agg0\"\n"
                                  "bandwidth_factor = 0.5\nat_s = 2\nuntil_s = 1\n",
                                  "p.toml");
  CHECK_THROWS_WITH(config::check_fault_plan(plan, targets, "p.toml"),
                    Catch::Contains("event[0]") && Catch::Contains("later than the start"));
}
