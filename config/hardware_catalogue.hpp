// The hardware catalogue: GPUs, NVLink generations, NICs, switches and NCCL's tuner
// figures per GPU generation as data (presets/hardware/{gpus,nvlink,nics,switches,nccl}.toml,
// each figure with its source there).
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
  std::map<std::string, topology::NcclTuningSpec, std::less<>> nccl; // by generation name

  const topology::GpuSpec* gpu(std::string_view model) const;
  const topology::NvlinkSpec* nvlink(std::string_view generation) const;
  const topology::NicSpec* nic(std::string_view model) const;
  const topology::SwitchSpec* switch_model(std::string_view model) const;
  /// NCCL's tuner set for a GPU of `compute_capability`: the set with the greatest
  /// min_compute_capability not above it (NCCL's compCapIndex); nullptr if none.
  const topology::NcclTuningSpec* nccl_for(int64_t compute_capability) const;
  /// "A, B, C" — the names of one section, for error messages.
  std::string gpu_names() const;
  std::string nvlink_names() const;
  std::string nic_names() const;
  std::string switch_names() const;
  std::string nccl_names() const; // "Ampere (≥ 80), …"
};

/// The catalogue embedded from presets/hardware/ (parsed once; ConfigError naming the
/// preset file and key if it is malformed).
const HardwareCatalogue& hardware_catalogue();

/// Parses the catalogue texts; `*_file` names them in errors. Every entry must give every
/// key of its kind (documented at the top of each preset file). An empty `nccl_text`:
/// the embedded presets/hardware/nccl.toml.
HardwareCatalogue parse_hardware_catalogue(std::string_view gpus_text, std::string_view nvlink_text,
                                           std::string_view nics_text, std::string_view switches_text,
                                           const std::string& gpus_file = "preset hardware/gpus",
                                           const std::string& nvlink_file = "preset hardware/nvlink",
                                           const std::string& nics_file = "preset hardware/nics",
                                           const std::string& switches_file = "preset hardware/switches",
                                           std::string_view nccl_text = {},
                                           const std::string& nccl_file = "preset hardware/nccl");

/// Reads the GPU keys of `t` over `base` (a catalogue entry; nullptr: every key required).
/// Used for catalogue entries and for a cluster file's [gpu] overrides alike.
void read_gpu_keys(TableReader& t, const topology::GpuSpec* base, const HardwareCatalogue* catalogue,
                   topology::GpuSpec& out);

} // namespace twinscale::config
