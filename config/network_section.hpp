// The cluster file's [network] table: congestion control and PFC (topology::NetworkCcSpec).
// Keys, units and defaults are in the key table config/cluster_keys.cpp; the models and
// the sources of the defaults in docs/congestion.md.
#pragma once

#include "config/toml_reader.hpp"
#include "topology/congestion_spec.hpp"

namespace twinscale::config {

/// Reads `[network]` of a cluster table (absent: no congestion control, PFC on) and
/// calls finish() on it and its sub-tables.
topology::NetworkCcSpec parse_network(TableReader& cluster);

} // namespace twinscale::config
