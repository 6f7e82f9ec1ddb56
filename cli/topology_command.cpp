// `twinscale topology show (CLUSTER | --preset NAME) [--gpus N] [--json] [--dot FILE]`
// `twinscale topology ecmp (CLUSTER | --preset NAME) --job TPxDPxPP|tp8xdp16xpp8 [--gpus N]
//      [--placement linear|tor-aware|random] [--traffic dp-ring|pp] [--seed S] [--json]`
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/checked_options.hpp"
#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "config/cluster_file.hpp"
#include "config/error.hpp"
#include "config/scenario.hpp"
#include "schedules/limits.hpp"
#include "schedules/output_file.hpp"
#include "topology/analysis.hpp"
#include "topology/ecmp_analysis.hpp"
#include "topology/placement.hpp"

namespace twinscale::cli {

namespace {

using Json = nlohmann::ordered_json;
constexpr int64_t kMaxDotLinks = 5000;

struct TopologyArgs {
  std::string cluster;
  std::string preset;
  int64_t gpus = 0;
  bool json = false;
  std::string dot;
  // ecmp
  std::string job;
  std::string placement = "linear";
  std::string traffic = "dp-ring";
  uint64_t seed = 0;
  std::vector<std::string> set; // --set KEY=VALUE of the cluster's TOML
};

/// Usage check, run while parsing (so a violation exits 2).
void check_cluster_choice(const TopologyArgs& a) {
  if (a.cluster.empty() == a.preset.empty())
    throw CLI::ValidationError("topology", "give exactly one of CLUSTER (a preset name or a file) or --preset NAME");
}

topology::ClusterSpec load(const TopologyArgs& a) {
  topology::ClusterSpec spec =
      config::load_cluster(a.preset.empty() ? a.cluster : a.preset, cluster_key_overrides(a.set));
  if (a.gpus > 0) spec.gpus = a.gpus;
  return spec;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string tbit(double bytes_per_s) { return fixed(bytes_per_s * 8 / 1e12, 1) + " Tb/s"; }

Json shape_json(const topology::ClosShape& s) {
  return Json{{"tiers", s.tiers},
              {"gpus_per_server", s.gpus_per_server},
              {"nics_per_server", s.nics_per_server},
              {"rails", s.rails},
              {"nics_per_server_per_tor", s.nics_per_server_per_tor},
              {"servers_per_tor", s.servers_per_tor},
              {"server_groups", s.server_groups},
              {"split_downlinks", s.split_downlinks},
              {"nic_link_bw_bytes_per_s", s.nic_link_bw_bytes_per_s},
              {"radix", s.radix},
              {"tor_down_ports", s.tor_down_ports},
              {"tor_up_ports", s.tor_up_ports},
              {"tor_down_ports_used", s.tor_down_ports_used},
              {"tors_per_pod", s.tors_per_pod},
              {"blocks", s.blocks},
              {"pods", s.pods},
              {"aggs_per_pod", s.aggs_per_pod},
              {"links_per_agg", s.links_per_agg},
              {"agg_down_ports", s.agg_down_ports},
              {"agg_up_ports", s.agg_up_ports},
              {"spine_planes", s.spine_planes},
              {"spines_per_plane", s.spines_per_plane},
              {"links_per_spine", s.links_per_spine},
              {"rail_only", s.rail_only}};
}

Json analysis_json(const topology::Fabric& f, const topology::FabricAnalysis& a) {
  Json j;
  j["cluster"] = a.name;
  j["gpus"] = a.gpus;
  j["servers"] = a.servers;
  j["nics"] = a.nics;
  j["rails"] = a.rails;
  j["tiers"] = a.tiers;
  j["switches"] = Json{{"tor", a.tors}, {"aggregation", a.aggs}, {"spine", a.spines}, {"total", a.switches}};
  Json tiers = Json::array();
  for (const auto& t : a.tiers_summary) {
    Json tj{
        {"tier", t.tier}, {"count", t.switches}, {"up_links", t.up_links}, {"up_bw_bytes_per_s", t.up_bw_bytes_per_s}};
    if (t.tier != "server") tj["oversubscription"] = t.oversubscription; // down:up bandwidth
    tiers.push_back(tj);
  }
  j["tier_capacity"] = tiers;
  Json links = Json::object();
  for (const auto& k : a.links_by_kind)
    links[topology::to_string(k.kind)] = Json{{"count", k.links}, {"bw_bytes_per_s", k.bw_bytes_per_s}};
  j["links"] = links;
  j["links_total"] = a.links;
  j["bisection_bw_bytes_per_s"] = a.bisection_bw_bytes_per_s;
  j["bisection_limited_by"] = a.bisection_limited_by;
  j["diameter_links"] = a.diameter_links;
  j["route_diameter_links"] = a.route_diameter_links;
  Json d = Json::array();
  for (const auto& c : a.distances)
    if (c.exists) d.push_back(Json{{"between", c.between}, {"links", c.links}, {"switch_hops", c.switch_hops}});
  j["distances"] = d;
  Json rails = Json::array();
  for (const auto& r : a.rails_summary)
    rails.push_back(Json{{"rail", r.rail},
                         {"nics", r.nics},
                         {"tors", r.tors},
                         {"aggregation", r.aggs},
                         {"plane_components", r.plane_components}});
  j["rails_detail"] = rails;
  j["shape"] = shape_json(f.shape());
  return j;
}

void print_table(const topology::Fabric& f, const topology::FabricAnalysis& a, std::ostream& os) {
  const auto& s = f.shape();
  const auto& spec = f.spec();
  os << "cluster " << a.name << ": " << a.gpus << " GPUs (" << spec.gpu.model << "), " << a.servers << " servers × "
     << s.gpus_per_server << " GPUs, " << s.nics_per_server << " NICs × "
     << fixed(spec.server.nic_bw_bytes_per_s * 8 / 1e9, 0) << " Gb/s on " << a.rails << " rail(s)\n";
  os << "switch " << spec.switch_spec.model << ": radix " << s.radix << " × "
     << fixed(spec.switch_spec.port_bw_bytes_per_s * 8 / 1e9, 0) << " Gb/s; " << a.tiers << " tiers; "
     << (s.split_downlinks ? "split" : "whole") << " downlinks; " << s.servers_per_tor << " servers per ToR\n";
  if (s.rail_only)
    os << "rail-only: no switch connects rails; cross-rail traffic crosses NVLink to the destination's rail first\n";
  os << "\n";
  os << "tier          switches   up links   up capacity   down:up\n";
  for (const auto& t : a.tiers_summary) {
    char line[160];
    std::snprintf(line, sizeof line, "%-12s %9lld %10lld %13s %9s\n",
                  t.tier == "server" ? "server NICs" : t.tier.c_str(), static_cast<long long>(t.switches),
                  static_cast<long long>(t.up_links), tbit(t.up_bw_bytes_per_s).c_str(),
                  t.tier == "server" ? "-" : (fixed(t.oversubscription, 2) + ":1").c_str());
    os << line;
  }
  {
    char line[160];
    std::snprintf(line, sizeof line, "%-12s %9lld\n", "spine", static_cast<long long>(a.spines));
    os << line;
  }
  os << "switches total " << a.switches << "\n\nlinks            count   bw per direction\n";
  for (const auto& k : a.links_by_kind) {
    char line[160];
    std::snprintf(line, sizeof line, "%-17s %7lld %12s Gb/s\n", topology::to_string(k.kind),
                  static_cast<long long>(k.links), fixed(k.bw_bytes_per_s * 8 / 1e9, 0).c_str());
    os << line;
  }
  os << "links total " << a.links << "\n\n";
  os << "bisection " << tbit(a.bisection_bw_bytes_per_s) << " per direction (limited by " << a.bisection_limited_by
     << ")\n";
  os << "diameter " << a.diameter_links << " links (graph), " << a.route_diameter_links << " links (routes)\n";
  for (const auto& c : a.distances)
    if (c.exists) os << "  " << c.between << ": " << c.links << " links, " << c.switch_hops << " switch hop(s)\n";
  os << "\nrail  NICs  ToRs  aggs  plane components\n";
  for (const auto& r : a.rails_summary) {
    char line[160];
    std::snprintf(line, sizeof line, "%4lld %5lld %5lld %5lld %17lld\n", static_cast<long long>(r.rail),
                  static_cast<long long>(r.nics), static_cast<long long>(r.tors), static_cast<long long>(r.aggs),
                  static_cast<long long>(r.plane_components));
    os << line;
  }
}

/// Writes `text` to `path` atomically (temporary file in the same folder, then rename).
void write_atomically(const std::string& path, const std::string& text) {
  schedules::write_output_file(path, text, "--dot graph");
}

std::string dot_text(const topology::Fabric& f) {
  std::ostringstream os;
  os << "graph \"" << f.spec().name << "\" {\n  node [shape=box, fontsize=9];\n";
  const char* colour[] = {"lightgreen", "khaki", "lightblue", "orange", "salmon", "plum"};
  for (uint32_t v = 0; v < f.vertices().size(); ++v)
    os << "  \"" << f.vertex_name(v) << "\" [style=filled, fillcolor=" << colour[static_cast<int>(f.vertices()[v].kind)]
       << "];\n";
  for (uint32_t l = 0; l < f.links().size(); ++l) {
    const auto& link = f.links()[l];
    os << "  \"" << f.vertex_name(link.a) << "\" -- \"" << f.vertex_name(link.b) << "\" [tooltip=\"" << f.link_name(l)
       << " " << fixed(link.bw_bytes_per_s * 8 / 1e9, 0) << " Gb/s\"];\n";
  }
  os << "}\n";
  return os.str();
}

int run_show(const TopologyArgs& a) {
  const topology::Fabric f(load(a));
  if (!a.dot.empty()) {
    const auto n = static_cast<int64_t>(f.links().size());
    if (n > kMaxDotLinks)
      throw config::ConfigError("--dot: cluster '" + f.spec().name + "' has " + std::to_string(n) +
                                " links; GraphViz output is for small fabrics (≤ " + std::to_string(kMaxDotLinks) +
                                " links): use a tiny-* preset or a smaller --gpus");
    write_atomically(a.dot, dot_text(f));
    std::cerr << "twinscale: wrote " << a.dot << " (" << n << " links)\n";
  }
  const topology::FabricAnalysis an = topology::analyze(f);
  if (a.json)
    std::cout << analysis_json(f, an).dump(2) << "\n";
  else
    print_table(f, an, std::cout);
  return 0;
}

topology::JobShape parse_job(const std::string& text) {
  const LayoutShape v = parse_layout_option("--job", text, false);
  topology::JobShape s;
  s.tp = v.tp;
  s.dp = v.dp;
  s.pp = v.pp;
  return s;
}

int run_ecmp(const TopologyArgs& a) {
  topology::ClusterSpec spec = load(a);
  const topology::JobShape job = parse_job(a.job);
  if (spec.gpus == 0) spec.gpus = job.tp * job.dp * job.pp;
  const topology::Fabric f(spec);
  const topology::PlacementPolicy pol = config::parse_placement(a.placement, "--placement");
  const auto gpu_of_rank = topology::place(f, job, pol, a.seed);
  const double bytes = 1 << 20;
  const auto flows = a.traffic == "pp" ? topology::pp_neighbour_flows(job, gpu_of_rank, bytes)
                                       : topology::dp_ring_flows(job, gpu_of_rank, bytes);
  const auto hash = topology::analyze_ecmp(f, flows, topology::EcmpPolicy::Hash, a.seed);
  const auto ideal = topology::analyze_ecmp(f, flows, topology::EcmpPolicy::IdealSpread, a.seed);
  if (a.json) {
    Json j{{"cluster", f.spec().name},
           {"job", a.job},
           {"layout", Json{{"tp", job.tp}, {"dp", job.dp}, {"pp", job.pp}}},
           {"placement", a.placement},
           {"traffic", a.traffic},
           {"seed", a.seed},
           {"flows", flows.size()},
           {"network_flows", hash.network_flows},
           {"flows_leaving_tor", hash.flows_leaving_tor},
           {"hash", Json{{"worst_collision_factor", hash.worst_collision_factor},
                         {"worst_link", hash.worst_collision_factor > 0 ? f.link_name(hash.worst_link) : ""},
                         {"worst_direction", hash.worst_up ? "up" : "down"},
                         {"max_flows_on_link", hash.max_flows_on_link}}},
           {"ideal_spread", Json{{"worst_collision_factor", ideal.worst_collision_factor}}}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << "cluster " << f.spec().name << ", job " << layout_text(LayoutShape{job.tp, 1, 1, job.dp, job.pp})
              << " (" << a.placement << "), traffic " << a.traffic << ", seed " << a.seed << "\n";
    std::cout << "flows " << flows.size() << " (" << hash.network_flows << " leave their server, "
              << hash.flows_leaving_tor << " their ToR)\n";
    std::cout << "ECMP hash:    worst collision factor " << fixed(hash.worst_collision_factor, 3);
    if (hash.worst_collision_factor > 0)
      std::cout << " on " << f.link_name(hash.worst_link) << " (" << (hash.worst_up ? "up" : "down") << "), "
                << hash.max_flows_on_link << " flows max on a link";
    std::cout << "\nideal spread: worst collision factor " << fixed(ideal.worst_collision_factor, 3) << "\n";
  }
  return 0;
}

void add_cluster_options(CLI::App* cmd, TopologyArgs& args) {
  cmd->add_option("cluster", args.cluster, "cluster preset name or cluster TOML file");
  cmd->add_option("--preset", args.preset, "cluster preset name");
  add_integer_option(*cmd, "--gpus", args.gpus, 1, schedules::kMaxRanks, "2^20", "build the fabric for this many GPUs");
  cmd->add_flag("--json", args.json, "machine-readable output");
  add_cluster_set_option(*cmd, args.set);
}

} // namespace

void add_topology_command(CLI::App& app, Action& action) {
  auto args = std::make_shared<TopologyArgs>();
  CLI::App* topo = app.add_subcommand("topology", "inspect a cluster's fabric");
  topo->require_subcommand(1);

  CLI::App* show = topo->add_subcommand("show", "switch counts, links, bisection, diameter, rails");
  add_cluster_options(show, *args);
  show->add_option("--dot", args->dot, "write a GraphViz file (small fabrics only)");
  show->callback([args, &action] {
    check_cluster_choice(*args);
    action = [args] { return run_show(*args); };
  });

  CLI::App* ecmp = topo->add_subcommand("ecmp", "per-flow ECMP collisions of a job's traffic");
  add_cluster_options(ecmp, *args);
  ecmp->add_option("--job", args->job, "job layout TPxDPxPP in Megatron's order (8x16x8) or named (tp8xdp16xpp8)")
      ->required();
  ecmp->add_option("--placement", args->placement, "linear | tor-aware | random")
      ->check(CLI::IsMember(config::placement_names()));
  ecmp->add_option("--traffic", args->traffic, "dp-ring | pp")->check(CLI::IsMember({"dp-ring", "pp"}));
  add_seed_option(*ecmp, "--seed", args->seed, "ECMP hash and placement seed");
  ecmp->callback([args, &action] {
    check_cluster_choice(*args);
    action = [args] { return run_ecmp(*args); };
  });
}

} // namespace twinscale::cli
