// The hardware catalogue: GPUs, NVLink generations, NICs and switches as data
// (presets/hardware/{gpus,nvlink,nics,switches}.toml, each figure with its source there).
// Cluster files name their parts from it ([gpu] model, [server] nic, [switch] model) and
// may override any key. No hardware figure lives in C++.
//
//   const auto& hw = config::hardware_catalogue();     // the embedded catalogue
//   const topology::GpuSpec* a100 = hw.gpu("A100-SXM-80GB");
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "config/toml_reader.hpp"
#include "topology/cluster.hpp"

namespace twinscale::config {

struct HardwareCatalogue {
  std::map<std::string, topology::GpuSpec, std::less<>> gpus;
  std::map<std::string, topology::NvlinkSpec, std::less<>> nvlinks;
  std::map<std::string, topology::NicSpec, std::less<>> nics;
  std::map<std::string, topology::SwitchSpec, std::less<>> switches;

  const topology::GpuSpec* gpu(std::string_view model) const;
  const topology::NvlinkSpec* nvlink(std::string_view generation) const;
  const topology::NicSpec* nic(std::string_view model) const;
  const topology::SwitchSpec* switch_model(std::string_view model) const;
  /// "A, B, C" — the names of one section, for error messages.
  std::string gpu_names() const;
  std::string nvlink_names() const;
  std::string nic_names() const;
  std::string switch_names() const;
};

/// The catalogue embedded from presets/hardware/ (parsed once; ConfigError naming the
/// preset file and key if it is malformed).
const HardwareCatalogue& hardware_catalogue();

/// Parses the four catalogue texts; `*_file` names them in errors. Every entry must give
/// every key of its kind (documented at the top of each preset file).
HardwareCatalogue parse_hardware_catalogue(std::string_view gpus_text, std::string_view nvlink_text,
                                           std::string_view nics_text, std::string_view switches_text,
                                           const std::string& gpus_file = "preset hardware/gpus",
                                           const std::string& nvlink_file = "preset hardware/nvlink",
                                           const std::string& nics_file = "preset hardware/nics",
                                           const std::string& switches_file = "preset hardware/switches");

/// Reads the GPU keys of `t` over `base` (a catalogue entry; nullptr: every key required).
/// Used for catalogue entries and for a cluster file's [gpu] overrides alike.
void read_gpu_keys(TableReader& t, const topology::GpuSpec* base, const HardwareCatalogue* catalogue,
                   topology::GpuSpec& out);

} // namespace twinscale::config
