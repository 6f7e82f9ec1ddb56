// NCCL's tuner figures per GPU generation (presets/hardware/nccl.toml): each GPU of the
// catalogue gets the set of its compute capability; the Ampere set is exactly the figures
// the model always had; the Hopper and Blackwell sets carry their releases' changes
// (LL at half the bus bandwidth under a ceiling, LL128's per-channel ceiling, the network
// overhead floor, extra all-reduce network steps); a mixed cluster takes the lowest set
// without LL128; a malformed set is rejected naming the file and key.
#include <catch2/catch.hpp>

#include <string>

#include "config/cluster_file.hpp"
#include "config/hardware_catalogue.hpp"
#include "config/presets.hpp"
#include "sim/nccl_model.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using Catch::Contains;
using schedules::OpKind;

namespace {

constexpr double GiB = 1024.0 * 1024 * 1024;

std::string text(const char* name) { return std::string(config::preset_text("hardware", name)); }

config::HardwareCatalogue parse_nccl(const std::string& nccl) {
  return config::parse_hardware_catalogue(text("gpus"), text("nvlink"), text("nics"), text("switches"), "gpus.toml",
                                          "nvlink.toml", "nics.toml", "switches.toml", nccl, "nccl.toml");
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  REQUIRE(at != std::string::npos);
  return s.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("NCCL sets: each catalogue GPU gets its generation's", "[sim][nccl][catalogue]") {
  const auto& hw = config::hardware_catalogue();
  const std::pair<const char*, const char*> expect[] = {{"A100-SXM-80GB", "Ampere"}, {"A100-SXM-40GB", "Ampere"},
                                                        {"H100-SXM", "Hopper"},      {"H200-SXM", "Hopper"},
                                                        {"B200", "Blackwell"},       {"GB200", "Blackwell"}};
  for (const auto& [gpu, generation] : expect) {
    INFO(gpu);
    REQUIRE(hw.gpu(gpu) != nullptr);
    CHECK(hw.gpu(gpu)->nccl.generation == generation);
  }
  CHECK(hw.nccl_for(80)->generation == "Ampere");
  CHECK(hw.nccl_for(89)->generation == "Ampere"); // sm_89 (Ada) uses NCCL's Ampere row
  CHECK(hw.nccl_for(120)->generation == "Blackwell");
  CHECK(hw.nccl_for(75) == nullptr);
}

TEST_CASE("NCCL sets: Ampere is exactly the model's figures of NCCL 2.7", "[sim][nccl][catalogue]") {
  const auto& t = config::hardware_catalogue().gpu("A100-SXM-80GB")->nccl;
  CHECK(t.nccl_release == "2.7.8");
  CHECK(t.enabled == std::array<bool, 3>{true, true, true});
  CHECK(t.ring_base_latency_s == std::array<double, 3>{3.6e-6, 10.0e-6, 8.4e-6});
  CHECK(t.tree_base_latency_s == std::array<double, 3>{4.4e-6, 4.4e-6, 0.0});
  // Step latencies in µs, converted as the catalogue always did (µs × 1e-6).
  CHECK(t.nvlink_ring_step_s == std::array<double, 3>{0.47 * 1e-6, 1.9 * 1e-6, 3.4 * 1e-6});
  CHECK(t.nvlink_tree_step_s == std::array<double, 3>{0.52 * 1e-6, 1.2 * 1e-6, 28.0 * 1e-6});
  CHECK(t.net_ring_step_s == std::array<double, 3>{2.7 * 1e-6, 4.0 * 1e-6, 9.6 * 1e-6});
  CHECK(t.net_tree_step_s == std::array<double, 3>{5.0 * 1e-6, 8.5 * 1e-6, 50.0 * 1e-6});
  CHECK(t.ll_nvlink_step_multi_server_factor == 1.8);
  CHECK(t.ring_simple_plateau_factor == 1.9);
  CHECK(t.ll_fraction_all_reduce_or_multi_server == 1.0 / 4.0);
  CHECK(t.ll_fraction_other == 1.0 / 3.0); // the decimal reads back as the quotient
  CHECK(t.ll128_fraction == 0.92);
  CHECK(t.ll128_fraction_one_gpu_per_server == 0.7);
  CHECK(t.ll128_max_bw_per_channel_all_reduce == 16.7e9);
  CHECK(t.ll128_max_bw_per_channel_all_gather == 18.3e9);
  CHECK(t.ll128_max_bw_per_channel_reduce_scatter == 15.2e9);
  CHECK(t.ll128_max_bw_per_channel_broadcast == 18.8e9);
  CHECK(t.tree_fraction == 0.9);
  CHECK(t.tree_ll_fraction == 1.0 / 3.8);
  CHECK(t.tree_ll128_fraction == 0.915);
  CHECK(t.tree_ll128_fraction_one_server == 7.0 / 9.0);
  for (double x : t.net_overhead_s) CHECK(x == 0);
  for (double x : t.ll_max_busbw_bytes_per_s) CHECK(x == 0);
  CHECK(t.all_reduce_extra_net_steps == 0);
}

TEST_CASE("NCCL sets: Hopper's tuner on an H100 cluster", "[sim][nccl]") {
  const NcclParams p = resolve_nccl({}, config::load_cluster("h100-400g"));
  CHECK(nccl_tuning(p).nccl_release == "2.21.5");
  // One server of 8: LL at half the bus bandwidth, capped at 141 GB/s; LL128 at 0.92
  // unless 36.7 GB/s per channel binds.
  const CollectiveShape one{OpKind::AllReduce, false, 8, 1, 8};
  CHECK(protocol_cost(p, one, NcclProtocol::LL, 1024, 200e9).bw_fraction == 0.5);
  CHECK(protocol_cost(p, one, NcclProtocol::LL, 1024, 370e9).bw_fraction == Approx(141e9 / 370e9));
  CHECK(protocol_cost(p, one, NcclProtocol::LL128, 1e6, 200e9).bw_fraction == Approx(0.92));
  CHECK(protocol_cost(p, one, NcclProtocol::LL128, 1e6, 370e9).bw_fraction == Approx(36.7e9 * 8 / 370e9));
  // One server, LL: 6.6 µs + 14 NVLink steps of 0.6 µs.
  const auto ll = protocol_cost(p, one, NcclProtocol::LL, 1024, 370e9);
  CHECK(protocol_latency_s(p, one, ll) == Approx(6.6e-6 + 14 * 0.6e-6));
  // 4 servers, Simple past the plateau: 2·4 network steps of 14 µs, the other 54 over
  // over NVLink (3.4 µs, above the 3 µs network-overhead floor), all × 1.4.
  const CollectiveShape four{OpKind::AllReduce, false, 32, 4, 8};
  const auto simple = protocol_cost(p, four, NcclProtocol::Simple, 1 * GiB, 370e9);
  CHECK(protocol_latency_s(p, four, simple) == Approx((8.4e-6 + 54 * 3.4e-6 + 8 * 14e-6) * 1.4));
  const auto ll4 = protocol_cost(p, four, NcclProtocol::LL, 1024, 370e9);
  CHECK(ll4.intra_step_s == Approx(1.0e-6)); // 0.6 µs raised to the 1 µs overhead, no × 1.8
  // Tree: 0.92 of the bus bandwidth under 36.0 GB/s per channel (4 servers).
  const CollectiveShape tree{OpKind::AllReduce, true, 32, 4, 8};
  CHECK(protocol_cost(p, tree, NcclProtocol::Simple, 1 * GiB, 200e9).bw_fraction == Approx(0.92));
  CHECK(protocol_cost(p, tree, NcclProtocol::Simple, 1 * GiB, 370e9).bw_fraction == Approx(36.0e9 * 8 / 370e9));
  // Small messages still choose LL, large ones Simple.
  CHECK(choose_protocol(p, one, 1024, 370e9).protocol == NcclProtocol::LL);
  CHECK(choose_protocol(p, four, 1 * GiB, 370e9).protocol == NcclProtocol::Simple);
}

TEST_CASE("NCCL sets: a cluster of several generations takes the lowest, without LL128", "[sim][nccl]") {
  auto spec = config::load_cluster("h100-400g");
  CHECK(nccl_tuning(resolve_nccl({}, spec)).enabled[1]);
  topology::GpuGroup group;
  group.first_server = 0;
  group.last_server = 1;
  group.gpu = *config::hardware_catalogue().gpu("A100-SXM-80GB");
  spec.gpu_groups.push_back(group);
  const NcclParams mixed = resolve_nccl({}, spec);
  const auto& t = nccl_tuning(mixed);
  CHECK(t.generation == "Ampere");
  CHECK_FALSE(t.enabled[1]);
  CHECK(t.enabled[0]);
  spec.gpu_groups[0].gpu = *config::hardware_catalogue().gpu("H200-SXM"); // same compute capability
  CHECK(nccl_tuning(resolve_nccl({}, spec)).enabled[1]);
}

TEST_CASE("NCCL sets: malformed sets and GPUs name the file and key", "[sim][nccl][catalogue][errors]") {
  const std::string nccl = text("nccl");
  CHECK(parse_nccl(nccl).nccl.size() == 3);
  CHECK_THROWS_WITH(parse_nccl(replaced(nccl, "tree_fraction = 0.9 ", "")),
                    Contains("nccl.toml") && Contains("Ampere.tree_fraction"));
  CHECK_THROWS_WITH(parse_nccl(replaced(nccl, "ll_max_busbw_gbps = [141.0, 39.0, 20.4]", "ll_max_busbw_gbps = [141]")),
                    Contains("Hopper.ll_max_busbw_gbps") && Contains("3 entries"));
  CHECK_THROWS_WITH(parse_nccl(replaced(nccl, "ll128_fraction = 0.92", "ll128_fraction = 1.5")),
                    Contains("ll128_fraction"));
  CHECK_THROWS_WITH(
      parse_nccl(replaced(nccl, "nvlink_ring_step_us = [0.47, 1.9, 3.4]", "nvlink_ring_step_us = [0.47, -1, 3.4]")),
      Contains("Ampere.nvlink_ring_step_us") && Contains("≥ 0"));
  // A GPU below every set: the error lists the sets.
  const std::string gpus = replaced(text("gpus"), "compute_capability = 80 ", "compute_capability = 70 ");
  CHECK_THROWS_WITH(config::parse_hardware_catalogue(gpus, text("nvlink"), text("nics"), text("switches"), "gpus.toml"),
                    Contains("gpus.toml") && Contains("A100-SXM-80GB.compute_capability") && Contains("Ampere (≥ 80)"));
  // A cluster file may set it: the GPU then takes that generation's set.
  const std::string file = R"(
gpus = 16
[gpu]
model = "H100-SXM"
compute_capability = 80
[server]
nic = "ConnectX-7"
[switch]
model = "tomahawk5"
[fabric]
tiers = 2
oversubscription = [1]
servers_per_tor = 4
)";
  const toml::table t = config::parse_toml(file, "c.toml");
  config::TableReader r(t, "c.toml");
  CHECK(config::parse_cluster(r, "c").gpu.nccl.generation == "Ampere");
}
