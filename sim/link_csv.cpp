#include "sim/link_csv.hpp"

#include <cstdio>

#include "topology/analysis.hpp"

namespace twinscale::sim {

std::string link_load_csv(const SimReport& report, const topology::Fabric& fabric) {
  std::string out = "link,name,direction,kind,bytes,busy_s,busy_fraction,rate_fraction\n";
  const auto& links = fabric.links();
  char buf[160];
  for (const LinkLoad& l : report.link_loads) {
    const auto& link = links.at(l.link);
    const double busy = report.makespan_s > 0 ? l.busy_s / report.makespan_s : 0;
    const double rate = l.busy_s > 0 && link.bw_bytes_per_s > 0 ? l.bytes / l.busy_s / link.bw_bytes_per_s : 0;
    std::snprintf(buf, sizeof buf, ",%s,%s,%.0f,%.9f,%.6f,%.6f\n", l.up ? "up" : "down", topology::to_string(link.kind),
                  l.bytes, l.busy_s, busy, rate);
    out += std::to_string(l.link) + "," + fabric.link_name(l.link) + buf;
  }
  return out;
}

} // namespace twinscale::sim
