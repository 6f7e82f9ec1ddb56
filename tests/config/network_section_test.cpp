// The cluster file's [network] table (config/network_section.cpp): defaults, every
// controller name, units converted, and errors that name the file, key and what is valid.
#include <catch2/catch.hpp>

#include <string>

#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/network_section.hpp"
#include "config/toml_reader.hpp"

using namespace twinscale;
using topology::CongestionControl;

namespace {

topology::NetworkCcSpec parse(const std::string& text) {
  const toml::table t = config::parse_toml(text, "c.toml");
  config::TableReader r(t, "c.toml");
  auto s = config::parse_network(r);
  r.finish();
  return s;
}

} // namespace

TEST_CASE("[network]: absent means no congestion control, PFC on, paper defaults", "[config][network]") {
  const auto s = parse("");
  CHECK(s.congestion_control == CongestionControl::None);
  CHECK(s.pfc.enabled);
  CHECK(s.dcqcn.kmin_bytes == 5e3);
  CHECK(s.dcqcn.g == Approx(1.0 / 256));
  CHECK(s.swift.beta == 0.8);
  CHECK(config::load_cluster_network("megascale-ampere").congestion_control == CongestionControl::None);
}

TEST_CASE("[network]: controllers and units", "[config][network]") {
  CHECK(parse("[network]\ncongestion_control = \"dcqcn\"\n").congestion_control == CongestionControl::Dcqcn);
  CHECK(parse("[network]\ncongestion_control = \"swift\"\n").congestion_control == CongestionControl::Swift);
  const auto s = parse("[network]\ncongestion_control = \"hybrid\"\nfeedback_delay_us = 8\n"
                       "[network.dcqcn]\ntau_us = 100\nrai_mbit_per_s = 80\n"
                       "[network.swift]\nbase_target_us = 30\n[network.pfc]\nenabled = false\n");
  CHECK(s.congestion_control == CongestionControl::Hybrid);
  CHECK(s.feedback_delay_s == Approx(8e-6));
  CHECK(s.dcqcn.tau_s == Approx(100e-6));
  CHECK(s.dcqcn.rai_bytes_per_s == Approx(10e6));
  CHECK(s.swift.base_target_s == Approx(30e-6));
  CHECK_FALSE(s.pfc.enabled);
  // Hyper increase: on by default (F = 5, R_HAI = 400 Mb/s), settable, 0 turns it off.
  CHECK(parse("").dcqcn.fast_recovery_steps == 5);
  CHECK(parse("").dcqcn.rhai_bytes_per_s == Approx(50e6));
  const auto h = parse("[network.dcqcn]\nfast_recovery_steps = 3\nrhai_mbit_per_s = 0\n");
  CHECK(h.dcqcn.fast_recovery_steps == 3);
  CHECK(h.dcqcn.rhai_bytes_per_s == 0);
  CHECK_THROWS_WITH(parse("[network.dcqcn]\nfast_recovery_steps = -1\n"),
                    Catch::Contains("network.dcqcn.fast_recovery_steps"));
}

TEST_CASE("[network]: bad values name the key and what is valid", "[config][network]") {
  CHECK_THROWS_WITH(parse("[network]\ncongestion_control = \"timely\"\n"),
                    Catch::Contains("network.congestion_control") && Catch::Contains("none, dcqcn, swift, hybrid"));
  CHECK_THROWS_WITH(parse("[network.dcqcn]\nkmin_bytes = 300e3\n"),
                    Catch::Contains("network.dcqcn.kmax_bytes") && Catch::Contains("must be > kmin_bytes"));
  CHECK_THROWS_WITH(parse("[network.pfc]\nxon_bytes = 1e6\n"),
                    Catch::Contains("network.pfc.xon_bytes") && Catch::Contains("< xoff_bytes"));
  CHECK_THROWS_WITH(parse("[network.swift]\nbeta = 2\n"), Catch::Contains("network.swift.beta"));
  CHECK_THROWS_AS(parse("[network]\ncc = \"dcqcn\"\n"), config::ConfigError);
}
