// The hardware catalogue (presets/hardware/): every entry parses, cluster files take their
// parts' figures from it and may override them, and a malformed catalogue is rejected
// naming the file and key.
#include <catch2/catch.hpp>

#include <string>

#include "config/cluster_file.hpp"
#include "config/gpu_keys.hpp"
#include "config/hardware_catalogue.hpp"
#include "config/presets.hpp"

using namespace twinscale;
using Catch::Contains;

namespace {

std::string text(const char* name) { return std::string(config::preset_text("hardware", name)); }

config::HardwareCatalogue parse_gpus(const std::string& gpus) {
  return config::parse_hardware_catalogue(gpus, text("nvlink"), text("nics"), text("switches"), "gpus.toml");
}

} // namespace

TEST_CASE("catalogue: the embedded entries", "[catalogue]") {
  const auto& hw = config::hardware_catalogue();
  for (const char* m : {"A100-SXM-80GB", "A100-SXM-40GB", "H100-SXM", "H200-SXM", "B200"})
    REQUIRE(hw.gpu(m) != nullptr);
  const auto& a100 = *hw.gpu("A100-SXM-80GB");
  CHECK(a100.peak_flops == 312e12);
  CHECK(a100.sms == 108);
  CHECK(a100.nvlink.generation == "NVLink3");
  CHECK(a100.nvlink_bw_bytes_per_s == 300e9); // 12 links × 25 GB/s
  CHECK(a100.nvlink.efficiency == Approx(0.77));
  CHECK(a100.kernels.gemm_tile_m == 256);
  CHECK(hw.gpu("H100-SXM")->nvlink_bw_bytes_per_s == 450e9);
  CHECK(hw.gpu("B200")->nvlink_bw_bytes_per_s == 900e9);
  CHECK(hw.nic("ConnectX-6")->bw_bytes_per_s == 25e9);
  CHECK(hw.nic("ConnectX-7")->efficiency == Approx(0.94));
  CHECK(hw.switch_model("tomahawk5")->port_bw_bytes_per_s == 100e9);
  CHECK(hw.switch_model("qm8790")->radix == 40);
  CHECK(a100.compute_capability == 80);
  CHECK(hw.gpu("H100-SXM")->compute_capability == 90);
  CHECK(hw.gpu("B200")->compute_capability == 100);
  CHECK(hw.nccl_names() == "Ampere (≥ 80), Blackwell (≥ 100), Hopper (≥ 90)");
}

TEST_CASE("catalogue: every key of the GPU key table is read from an entry", "[catalogue]") {
  // Each key written with an odd value lands in the member the table names.
  const std::string gpus = text("gpus");
  for (const config::GpuKey& f : config::gpu_keys()) {
    if (f.by_hand) continue;
    INFO(f.key);
    const std::string value = f.type == KeyType::Integer ? "7" : "0.125";
    const std::string entry = "[X]\n" + f.key + " = " + value + "\n";
    std::string s = gpus;
    const size_t at = s.find("[A100-SXM-40GB]");
    REQUIRE(at != std::string::npos);
    // X: a copy of A100-SXM-80GB's entry with the one key changed (its line removed first).
    const size_t start = s.find("[A100-SXM-80GB]");
    std::string copy = s.substr(start, at - start);
    copy.replace(0, std::string("[A100-SXM-80GB]").size(), "");
    std::string kept;
    size_t pos = 0;
    while (pos < copy.size()) {
      const size_t end = copy.find('\n', pos);
      const std::string line = copy.substr(pos, end - pos);
      if (line.rfind(f.key + " ", 0) != 0 && line.rfind(f.key + "=", 0) != 0) kept += line + "\n";
      pos = end == std::string::npos ? copy.size() : end + 1;
    }
    const auto hw = parse_gpus(s + "\n" + entry + kept);
    const topology::GpuSpec& x = *hw.gpu("X");
    const KeyValue got = f.get(x);
    if (f.type == KeyType::Integer)
      CHECK(std::get<int64_t>(got) == 7);
    else
      CHECK(std::get<double>(got) == 0.125);
  }
}

TEST_CASE("catalogue: clusters name their parts and override figures", "[catalogue]") {
  const auto c = config::load_cluster("megascale-ampere");
  CHECK(c.gpu.model == "A100-SXM-80GB");
  CHECK(c.gpu.kernels.flash.fwd_efficiency == Approx(0.60));
  CHECK(c.server.nic.model == "ConnectX-6");
  CHECK(c.server.nic_bw_bytes_per_s == 25e9);
  CHECK(c.server.nic.efficiency == Approx(0.96));
  CHECK(c.server.pcie_bw_bytes_per_s == 32e9);
  const auto h = config::load_cluster("h100-400g");
  CHECK(h.server.nic_bw_bytes_per_s == 50e9);
  CHECK(h.server.pcie_bw_bytes_per_s == 64e9);
  CHECK(h.gpu.nvlink.generation == "NVLink4");

  const std::string file = R"(
gpus = 32
[gpu]
model = "A100-SXM-80GB"
gemm_max_efficiency = 0.7
nvlink_efficiency = 0.8
[server]
nic = "ConnectX-7"
nic_efficiency = 0.9
[switch]
model = "tomahawk5"
[fabric]
tiers = 2
oversubscription = [1]
servers_per_tor = 4
)";
  const toml::table t = config::parse_toml(file, "c.toml");
  config::TableReader r(t, "c.toml");
  const auto o = config::parse_cluster(r, "c");
  CHECK(o.gpu.kernels.gemm_max_efficiency == Approx(0.7));
  CHECK(o.gpu.kernels.hbm_efficiency == Approx(0.85)); // untouched figures stay
  CHECK(o.gpu.nvlink.efficiency == Approx(0.8));
  CHECK(o.server.nic_bw_bytes_per_s == 50e9);
  CHECK(o.server.nic.efficiency == Approx(0.9));
  CHECK(o.switch_spec.port_bw_bytes_per_s == 100e9);
}

TEST_CASE("catalogue: malformed entries name file and key", "[catalogue][errors]") {
  const std::string gpus = text("gpus");
  const auto replaced = [&](const std::string& from, const std::string& to) {
    std::string s = gpus;
    const size_t at = s.find(from);
    REQUIRE(at != std::string::npos);
    s.replace(at, from.size(), to);
    return s;
  };
  CHECK_THROWS_WITH(parse_gpus(replaced("sms = 108", "")), Contains("gpus.toml") && Contains("A100-SXM-80GB.sms"));
  CHECK_THROWS_WITH(parse_gpus(replaced("nvlink = \"NVLink3\"", "nvlink = \"NVLink2\"")),
                    Contains("gpus.toml") && Contains("nvlink") && Contains("NVLink4"));
  CHECK_THROWS_WITH(parse_gpus(replaced("gemm_max_efficiency = 0.85", "gemm_max_efficiency = 0")),
                    Contains("gemm_max_efficiency"));
  CHECK_THROWS_WITH(parse_gpus(replaced("fp8_gemm_max_efficiency = 0.71", "fp8_gemm_max_efficiency = 1.5")),
                    Contains("H100-SXM.fp8_gemm_max_efficiency"));
  // FlashAttention's curve: a ratio must be above zero, a half-length not negative
  CHECK_THROWS_WITH(parse_gpus(replaced("flash_unmasked_ratio = 1.10", "flash_unmasked_ratio = 0")),
                    Contains("H100-SXM.flash_unmasked_ratio") && Contains("is 0; must be in (0, 4]"));
  CHECK_THROWS_WITH(parse_gpus(replaced("flash_keys_half = 408", "flash_keys_half = -1")),
                    Contains("H100-SXM.flash_keys_half") && Contains("must be in [0, "));
  // cuDNN's fused attention: a fraction of peak, at most 1
  CHECK_THROWS_WITH(
      parse_gpus(replaced("cudnn_attention_fwd_efficiency = 0.52", "cudnn_attention_fwd_efficiency = 52")),
      Contains("H100-SXM.cudnn_attention_fwd_efficiency") && Contains("must be in [0, 1]"));
  CHECK_THROWS_WITH(parse_gpus(replaced("sms = 108", "sms = 108\nsm_count = 108")),
                    Contains("unknown key") && Contains("sm_count"));
  CHECK_THROWS_WITH(parse_gpus("peak_flops = 1"), Contains("gpus.toml") && Contains("peak_flops"));
  CHECK_THROWS_WITH(config::parse_hardware_catalogue(text("gpus"), text("nvlink"), "[ConnectX-6]\ngbit_per_s = 200\n",
                                                     text("switches"), "g", "n", "nics.toml"),
                    Contains("nics.toml") && Contains("ConnectX-6.efficiency"));
}
