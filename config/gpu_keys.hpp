// The keys of a GPU: an entry of the hardware catalogue (presets/hardware/gpus.toml) and
// a cluster file's [gpu] or [[gpu_groups]] table, which override the entry's figures.
// Each key is described once here (common/key_schema.hpp); the catalogue reader
// (config/hardware_catalogue.cpp, read_gpu_keys) walks this table and docs/keys.md's
// "GPU catalogue" section is generated from it (config/tools/keys_doc.cpp).
//
// Adding a GPU key: the member in topology/cluster.hpp (GpuSpec or KernelFigures), one
// entry in gpu_keys.cpp, the figure with its source in every gpus.toml entry (or an
// optional key with a default), then build/config/twinscale_keys_doc > docs/keys.md.
#pragma once

#include <vector>

#include "common/key_schema.hpp"
#include "topology/cluster.hpp"

namespace twinscale::config {

using GpuKey = KeyField<topology::GpuSpec>;

/// Every GPU key, in the order an entry is read and the reference lists them. Keys marked
/// read_by_hand() (nvlink, nvlink_bw_bytes_per_s, compute_capability) take catalogue
/// lookups and are read by read_gpu_keys itself.
const std::vector<GpuKey>& gpu_keys();
/// The one table of a GPU entry.
const std::vector<KeySection>& gpu_sections();

} // namespace twinscale::config
