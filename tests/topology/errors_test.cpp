// Bad input: every invalid cluster combination is rejected with a message that names the
// key and the arithmetic that failed.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "config/cluster_file.hpp"
#include "tests/scratch.hpp"
#include "topology/fabric.hpp"

using namespace twinscale;
using Catch::Contains;

namespace {

const char* base = R"(
name = "bad"
gpus = 12288
[gpu]
model = "A100-SXM-80GB"
[server]
gpus = 8
nics = 8
nic_gbit_per_s = 200
rails = 8
[switch]
model = "tomahawk4"
[fabric]
tiers = 3
oversubscription = [1, 1]
split_downlinks = true
servers_per_tor = 64
)";

/// The base file with `from` replaced by `to` (from must occur).
topology::ClusterSpec parse_with(const std::string& from, const std::string& to) {
  std::string text = base;
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  text.replace(at, from.size(), to);
  const toml::table t = config::parse_toml(text, "bad.toml");
  config::TableReader r(t, "bad.toml");
  return config::parse_cluster(r, "bad");
}

topology::Fabric build_with(const std::string& from, const std::string& to) {
  return topology::Fabric(parse_with(from, to));
}

} // namespace

TEST_CASE("errors: the base file is valid", "[errors]") {
  CHECK(build_with("gpus = 12288", "gpus = 12288").gpus() == 12288);
}

TEST_CASE("errors: fabric combinations that do not fit", "[errors]") {
  using topology::TopologyError;
  CHECK_THROWS_WITH(build_with("rails = 8", "rails = 16"), Contains("server.rails") && Contains("16 rails > 8 NICs"));
  CHECK_THROWS_WITH(build_with("rails = 8", "rails = 3"), Contains("server.rails") && Contains("nics mod rails = 2"));
  CHECK_THROWS_WITH(build_with("servers_per_tor = 64", "servers_per_tor = 65"),
                    Contains("fabric.servers_per_tor") && Contains("65 NIC ports need 33 ToR ports") &&
                        Contains("at most 64 servers per ToR"));
  CHECK_THROWS_WITH(build_with("split_downlinks = true", "split_downlinks = false"),
                    Contains("fabric.servers_per_tor") && Contains("at most 32 servers"));
  CHECK_THROWS_WITH(build_with("gpus = 12288", "gpus = 131080"), Contains("gpus") && Contains("131072 GPUs"));
  CHECK_NOTHROW(build_with("gpus = 12288", "gpus = 131072"));
  CHECK_THROWS_WITH(build_with("tiers = 3\noversubscription = [1, 1]", "tiers = 2\noversubscription = [1]"),
                    Contains("use fabric.tiers = 3") && Contains("4096 GPUs"));
  CHECK_THROWS_WITH(build_with("oversubscription = [1, 1]", "oversubscription = [2, 1]"),
                    Contains("oversubscription[0]") && Contains("whole numbers"));
  CHECK_THROWS_WITH(build_with("oversubscription = [1, 1]", "oversubscription = [1, 1.5]"),
                    Contains("oversubscription[1]"));
  CHECK_NOTHROW(build_with("oversubscription = [1, 1]", "oversubscription = [3, 1]"));
  CHECK_THROWS_WITH(build_with("gpus = 12288", "gpus = 12290"), Contains("gpus") && Contains("mod 8 = 2"));
  CHECK_THROWS_WITH(build_with("gpus = 12288", "gpus = 0"), Contains("gpus") && Contains("--gpus"));
  CHECK_THROWS_WITH(build_with("nic_gbit_per_s = 200", "nic_gbit_per_s = 400"),
                    Contains("fabric.split_downlinks") && Contains("set split_downlinks = false"));
  CHECK_THROWS_WITH(build_with("nic_gbit_per_s = 200\nrails = 8\n[switch]\nmodel = \"tomahawk4\"\n[fabric]\ntiers = 3\n"
                               "oversubscription = [1, 1]\nsplit_downlinks = true",
                               "nic_gbit_per_s = 800\nrails = 8\n[switch]\nmodel = \"tomahawk4\"\n[fabric]\ntiers = 3\n"
                               "oversubscription = [1, 1]\nsplit_downlinks = false"),
                    Contains("server.nic_gbit_per_s") && Contains("faster than"));
  CHECK_THROWS_WITH(build_with("servers_per_tor = 64", "servers_per_tor = 64\ntors_per_pod = 33"),
                    Contains("fabric.tors_per_pod") && Contains("valid 1..32"));
  CHECK_THROWS_AS(build_with("servers_per_tor = 64", "servers_per_tor = 64\ntors_per_pod = 33"), TopologyError);
}

TEST_CASE("errors: malformed cluster files", "[errors]") {
  using config::ConfigError;
  CHECK_THROWS_WITH(parse_with("tiers = 3", "tiers = 4"),
                    Contains("bad.toml") && Contains("fabric.tiers") && Contains("[2, 3]"));
  CHECK_THROWS_WITH(parse_with("tiers = 3", "tiers = 3\nspeed = 1"), Contains("unknown key 'fabric.speed'"));
  CHECK_THROWS_WITH(parse_with("A100-SXM-80GB", "Z100"), Contains("gpu.model") && Contains("H100-SXM"));
  CHECK_THROWS_WITH(parse_with("nics = 8\n", "nics = 8\nnic = \"ConnectX-9\"\n"),
                    Contains("server.nic") && Contains("ConnectX-7"));
  CHECK_THROWS_WITH(parse_with("model = \"A100-SXM-80GB\"", "model = \"A100-SXM-80GB\"\nnvlink = \"NVLink9\""),
                    Contains("gpu.nvlink") && Contains("NVLink3"));
  CHECK_THROWS_WITH(parse_with("model = \"A100-SXM-80GB\"", "model = \"A100-SXM-80GB\"\ngemm_max_efficiency = 1.5"),
                    Contains("gpu.gemm_max_efficiency"));
  CHECK_THROWS_WITH(parse_with("\"tomahawk4\"", "\"tomahawk9\""), Contains("switch.model") && Contains("qm8790"));
  CHECK_THROWS_WITH(parse_with("oversubscription = [1, 1]", "oversubscription = [1]"),
                    Contains("fabric.oversubscription") && Contains("3 tiers need 2"));
  CHECK_THROWS_WITH(parse_with("oversubscription = [1, 1]", "oversubscription = [1, 0]"),
                    Contains("fabric.oversubscription") && Contains("> 0"));
  CHECK_THROWS_WITH(parse_with("nic_gbit_per_s = 200\n", ""), Contains("server.nic_gbit_per_s") && Contains("missing"));
  CHECK_THROWS_WITH(parse_with("model = \"A100-SXM-80GB\"", "model = \"custom\""), Contains("gpu.peak_flops"));
  CHECK_THROWS_WITH(parse_with("rails = 8", "rails = \"eight\""), Contains("server.rails") && Contains("integer"));
  CHECK_THROWS_WITH(parse_with("servers_per_tor = 64", "servers_per_tor = 0"), Contains("fabric.servers_per_tor"));
  CHECK_THROWS_WITH(parse_with("[fabric]", "[fabrik]"), Contains("fabric") && Contains("missing"));
  CHECK_THROWS_AS(parse_with("rails = 8", "rails = 8 8"), ConfigError);
}

TEST_CASE("errors: unknown presets and files", "[errors]") {
  CHECK_THROWS_WITH(config::load_cluster("megascale"), Contains("megascale-ampere") && Contains("tiny-2tier"));
  CHECK_THROWS_WITH(config::load_cluster("/nonexistent/x.toml"), Contains("/nonexistent/x.toml"));
}

TEST_CASE("cluster files: every preset loads and builds, a file path works too", "[errors][presets]") {
  for (const char* name : {"megascale-ampere", "megascale-ampere-single-rail", "dgx-a100-superpod", "h100-400g",
                           "tiny-2tier", "tiny-3tier"}) {
    INFO(name);
    const topology::ClusterSpec spec = config::load_cluster(name);
    CHECK(spec.name == name);
    CHECK_NOTHROW(topology::Fabric(spec));
  }
  const auto path = twinscale::test::scratch_dir("topology-errors") / "cluster.toml";
  { std::ofstream(path) << base; }
  const topology::ClusterSpec spec = config::load_cluster(path.string());
  std::filesystem::remove(path);
  CHECK(spec.name == "bad");
  CHECK(spec.server.nic_bw_bytes_per_s == Approx(25e9));
  CHECK(spec.switch_spec.radix == 64);
  CHECK(spec.switch_spec.port_bw_bytes_per_s == Approx(50e9));
  CHECK(spec.gpu.nvlink_bw_bytes_per_s == Approx(300e9));
}

TEST_CASE("errors: a route or spread between GPUs the fabric lacks names the GPU", "[errors]") {
  // route() and spread() read per-GPU tables; the check comes first, whichever end is bad
  const topology::Fabric f = build_with("gpus = 12288", "gpus = 1024");
  std::vector<topology::Hop> hops;
  std::vector<topology::WeightedHop> fluid;
  for (const auto& [src, dst] : {std::pair<int64_t, int64_t>{-1, 0}, {0, 1024}, {5000, 3}}) {
    const int64_t bad = src < 0 || src >= 1024 ? src : dst;
    INFO("src " << src << " dst " << dst);
    for (auto policy : {topology::EcmpPolicy::Hash, topology::EcmpPolicy::IdealSpread})
      CHECK_THROWS_WITH(f.route(src, dst, 0, 1, policy, hops),
                        Contains("GPU " + std::to_string(bad) + " does not exist") && Contains("GPUs 0..1023"));
    CHECK_THROWS_WITH(f.spread(src, dst, fluid), Contains("GPU " + std::to_string(bad) + " does not exist"));
  }
}
