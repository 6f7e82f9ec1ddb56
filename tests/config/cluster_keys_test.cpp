// The cluster key table (config/cluster_keys.cpp) and the reader driven by it: every key
// of the table is one the reader takes, under the table's name and in the table's unit;
// ranges and value names in messages come from the table; --set reads a name as text.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "config/cluster_file.hpp"
#include "config/cluster_keys.hpp"
#include "config/error.hpp"

using namespace twinscale;

namespace {

std::string error_of(const std::vector<std::string>& set, const std::string& cluster = "tiny-3tier") {
  std::vector<config::KeyOverride> edits;
  for (const std::string& s : set) edits.push_back(config::parse_key_override(s));
  try {
    config::load_cluster_file(cluster, edits);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_CASE("cluster keys: every key of the table is read under its name and unit", "[config][cluster-keys]") {
  // tiny-3tier with [network] written out: each key restated at the value it loads to
  // must be accepted (an unknown key is refused) and read back to that value.
  const config::ClusterFile base = config::load_cluster_file("tiny-3tier");
  int checked = 0;
  for (const config::ClusterKey& f : config::cluster_keys()) {
    if (!f.get || f.key == "name" || f.key.starts_with("gpu_groups.")) continue;
    INFO(f.key);
    const KeyValue v = f.get(base);
    const std::string text =
        f.key + "=" + (std::holds_alternative<std::string>(v) ? std::get<std::string>(v) : key_value_text(v));
    config::ClusterFile now;
    REQUIRE_NOTHROW(now = config::load_cluster_file("tiny-3tier", {config::parse_key_override(text)}));
    const KeyValue back = f.get(now);
    if (const double* d = std::get_if<double>(&v))
      CHECK(std::get<double>(back) == Approx(*d).epsilon(1e-12));
    else
      CHECK(back == v);
    ++checked;
  }
  CHECK(checked >= 50);
}

TEST_CASE("cluster keys: ranges and names in messages come from the table", "[config][cluster-keys]") {
  CHECK_THAT(error_of({"server.nics=0"}),
             Catch::Contains("server.nics") &&
                 Catch::Contains(std::to_string(config::cluster_key("server.nics").int_max)));
  CHECK_THAT(error_of({"network.congestion_control=reno"}),
             Catch::Contains("'network.congestion_control'") && Catch::Contains("none, dcqcn, swift, hybrid"));
  CHECK_THAT(error_of({"switch.model=tomahawk9"}), Catch::Contains("tomahawk4") && Catch::Contains("custom"));
  CHECK_THAT(error_of({"fabric.servers_per_tors=2"}), Catch::Contains("did you mean 'fabric.servers_per_tor'"));
  // "custom" makes the model's keys required
  CHECK_THAT(error_of({"server.nic=custom"}), Catch::Contains("nic_gbit_per_s"));
}

TEST_CASE("cluster keys: --set reads a bare name as text", "[config][cluster-keys]") {
  const auto c = config::load_cluster_file("tiny-3tier", {config::parse_key_override("server.nic=ConnectX-7")});
  CHECK(c.cluster.server.nic.model == "ConnectX-7");
  CHECK(c.cluster.server.nic_bw_bytes_per_s == c.cluster.server.nic.bw_bytes_per_s);
}

TEST_CASE("cluster keys: the table's units convert as the file states them", "[config][cluster-keys]") {
  const auto c = config::load_cluster_file("tiny-3tier", {config::parse_key_override("server.nic_gbit_per_s=100"),
                                                          config::parse_key_override("network.dcqcn.tau_us=20"),
                                                          config::parse_key_override("switch.latency_ns=250")});
  CHECK(c.cluster.server.nic_bw_bytes_per_s == 100e9 / 8);
  CHECK(c.network.dcqcn.tau_s == Approx(20e-6));
  CHECK(c.cluster.switch_spec.latency_s == Approx(250e-9));
  CHECK(config::cluster_key("server.nic_gbit_per_s").unit == "Gbit/s");
  CHECK(key_range_text(config::cluster_key("server.nic_gbit_per_s")) == "number > 0");
}
