// Per-link utilisation of a flow-mode run (SimOptions::link_loads) as CSV, next to a
// trace or per-rank CSV, for `twinscale report` (fabric heat-map) and `twinscale diagnose`
// (slow links): a header line
//   link,name,direction,kind,bytes,busy_s,busy_fraction,rate_fraction
// then one line per link direction that carried bytes, by link then direction (up = a → b
// of topology::Link). busy_fraction = busy time / makespan; rate_fraction = bytes /
// busy time / the link's raw bandwidth (what it moved while busy, against what it could).
#pragma once

#include <string>

#include "sim/simulate.hpp"
#include "topology/fabric.hpp"

namespace twinscale::sim {

std::string link_load_csv(const SimReport& report, const topology::Fabric& fabric);

} // namespace twinscale::sim
