// [network] in a cluster file: congestion control and PFC. Every key, its unit, range and
// default is in the cluster key table (config/cluster_keys.cpp, rendered in docs/keys.md);
// the sources of the defaults are in docs/congestion.md. Read through the table, then the
// rules that span keys (RED's kmax above kmin, Swift's flow-scaling window, PFC's resume
// below pause).
#include "config/network_section.hpp"

#include "config/cluster_keys.hpp"
#include "config/key_table_reader.hpp"

namespace twinscale::config {

topology::NetworkCcSpec parse_network(TableReader& cluster) {
  ClusterFile f = cluster_file_defaults();
  TableReader n = cluster.table("network");
  read_section(n, "network", cluster_sections(), cluster_keys(), f);
  const topology::NetworkCcSpec& s = f.network;
  if (!(s.dcqcn.kmax_bytes > s.dcqcn.kmin_bytes))
    n.table("dcqcn").fail("kmax_bytes", "must be > kmin_bytes (" + std::to_string(s.dcqcn.kmin_bytes) + ")");
  if (!(s.swift.fs_max_cwnd_packets > s.swift.fs_min_cwnd_packets))
    n.table("swift").fail("fs_max_cwnd_packets",
                          "must be > fs_min_cwnd_packets (" + std::to_string(s.swift.fs_min_cwnd_packets) + ")");
  if (!(s.pfc.xon_bytes < s.pfc.xoff_bytes))
    n.table("pfc").fail("xon_bytes", "must be < xoff_bytes (" + std::to_string(s.pfc.xoff_bytes) +
                                         "): resume below the pause threshold");
  n.finish();
  return s;
}

} // namespace twinscale::config
