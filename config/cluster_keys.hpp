// The cluster file's keys, each described once (common/key_schema.hpp): the cluster reader
// (config/cluster_file.cpp, config/network_section.cpp), the command line's
// `--set cluster.KEY=VALUE`, the study's cluster axes and the key reference docs/keys.md
// are derived from this table.
//
// Adding a cluster key: the member in topology/cluster.hpp (or congestion_spec.hpp for
// [network]), one entry in cluster_keys.cpp (in the function of its section), e.g.
//   member<F, &F::cluster, &C::fabric, &Fab::my_key>("fabric.my_key").range(0, 8).says("what it does"),
// then regenerate the reference: build/config/twinscale_keys_doc > docs/keys.md. A key
// whose default or validity depends on another key is marked read_by_hand() and read in
// cluster_file.cpp with its entry (type, range, unit still from here).
#pragma once

#include <string_view>
#include <vector>

#include "common/key_schema.hpp"
#include "config/cluster_file.hpp"

namespace twinscale::config {

using ClusterKey = KeyField<ClusterFile>;

/// Every cluster key, in the order the reference lists them.
const std::vector<ClusterKey>& cluster_keys();
/// The tables of a cluster file, top level first ([[gpu_groups]] is an array of tables).
const std::vector<KeySection>& cluster_sections();
/// The key named `key` ("server.nics", "network.dcqcn.pmax"); nullptr when none.
const ClusterKey* find_cluster_key(std::string_view key);
/// The key named `key`; an internal error (std::logic_error) when the table lacks it.
const ClusterKey& cluster_key(std::string_view key);
/// What a cluster file that leaves a key out gets (where it differs from the structs'
/// own defaults, e.g. split_downlinks = false).
ClusterFile cluster_file_defaults();

} // namespace twinscale::config
