// Cluster files: TOML → topology::ClusterSpec. Every key is described once, in the key table
// config/cluster_keys.cpp (docs/keys.md); presets live in presets/clusters/<name>.toml.
#pragma once

#include <string>
#include <string_view>

#include "config/key_overrides.hpp"
#include "config/toml_reader.hpp"
#include "topology/cluster.hpp"
#include "topology/congestion_spec.hpp"

namespace twinscale::config {

/// A cluster preset or file, read once: the cluster and its [network] table (congestion
/// control, PFC; keys in config/cluster_keys.cpp), which is not part of ClusterSpec.
struct ClusterFile {
  topology::ClusterSpec cluster;
  topology::NetworkCcSpec network;
};

/// A preset name (see preset_names("clusters")) or a path to a TOML file. Throws
/// ConfigError naming the file and key for bad input. `edits` (the command line's
/// `--set cluster.KEY=VALUE`, keys relative to the cluster document) are made to the TOML
/// before it is read, so they are checked as the file's own keys.
ClusterFile load_cluster_file(std::string_view name_or_path, const std::vector<KeyOverride>& edits = {});
/// load_cluster_file(name_or_path, edits).cluster
topology::ClusterSpec load_cluster(std::string_view name_or_path, const std::vector<KeyOverride>& edits = {});
/// load_cluster_file(name_or_path, edits).network
topology::NetworkCcSpec load_cluster_network(std::string_view name_or_path, const std::vector<KeyOverride>& edits = {});

/// Parses one cluster table (the whole file, or a [cluster] table of another file);
/// calls finish() on it, so unknown keys are rejected. `default_name` is used when the
/// table has no `name`. Its [network] table is validated and, when `network` is given,
/// stored there.
topology::ClusterSpec parse_cluster(TableReader& table, const std::string& default_name,
                                    topology::NetworkCcSpec* network = nullptr);

/// The memory check's capacity: the smallest HBM among the cluster's GPU models ([gpu]
/// and each [[gpu_groups]] entry; every rank must fit wherever it is placed), and which
/// model that is, e.g. "gpu_groups[0] (A100-SXM-40GB, servers 0-3)" or "[gpu]
/// (H100-SXM)". bytes = 0 when no model gives a size.
struct GpuMemoryLimit {
  double bytes = 0;
  std::string holder;
};
GpuMemoryLimit tightest_gpu_memory(const topology::ClusterSpec& cluster);

/// Presets for [gpu] model and [switch] model (names as written in cluster files).
bool gpu_model_spec(std::string_view model, topology::GpuSpec& out);
bool switch_model_spec(std::string_view model, topology::SwitchSpec& out);

} // namespace twinscale::config
