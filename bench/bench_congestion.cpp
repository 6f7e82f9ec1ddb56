// This benchmark shows how the four congestion controllers (none, DCQCN, Swift, MegaScale's
// hybrid) behave in the fluid model of sim/congestion/ on the small cases of
// docs/congestion.md, next to the fluid analyses' predictions, and what the model costs:
//  - N:1 incast (N = 2, 4, 8, 16): bottleneck throughput, Jain fairness, standing queue
//    (DCQCN's CoNEXT'16 fixed point, Swift's delay equilibrium);
//  - the PFC victim (N = 4): the throughput of a flow that only shares a paused uplink;
//  - a PFC storm (the incast receiver stops draining for 10 ms): the victim's throughput;
//  - a flow joining a running one: both rates over time, and DCQCN's gap closing from
//    10 % to 1 % of C against the linearised fluid model's ln(10) / λ;
//  - what an ECMP collision costs in the flow engine: the byte factor of the penalty
//    table (cc_penalty.hpp) for n = 2, 4, 8 flows of 16 MiB on one link.
// The [network] parameters come from the cluster preset or file given (default
// megascale-ampere). Usage: bench_congestion [CLUSTER] [OUTDIR]
// Writes OUTDIR/cases.csv and OUTDIR/join.csv (default: current folder) and prints the cases.
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench/measure.hpp"
#include "common/error.hpp"
#include "config/cluster_file.hpp"
#include "sim/congestion/cc_penalty.hpp"
#include "sim/congestion/dcqcn_equations.hpp"
#include "sim/congestion/fluid_model.hpp"
#include "sim/congestion/fluid_scenarios.hpp"

using namespace twinscale;
using namespace twinscale::sim::congestion;
using topology::CongestionControl;

namespace {

constexpr CongestionControl kAll[] = {CongestionControl::None, CongestionControl::Dcqcn, CongestionControl::Swift,
                                      CongestionControl::Hybrid};

struct Means {
  double total = 0, queue = 0, jain = 0;
  std::vector<double> flow;
};

Means means(const FluidResult& r, uint32_t port, double from_s) {
  Means m;
  int n = 0;
  for (const auto& s : r.samples) {
    if (s.t_s <= from_s) continue;
    if (m.flow.empty()) m.flow.assign(s.throughput.size(), 0);
    for (size_t f = 0; f < s.throughput.size(); ++f) m.flow[f] += s.throughput[f];
    m.queue += s.queue[port];
    ++n;
  }
  double sum = 0, sq = 0;
  for (double& x : m.flow) {
    x /= std::max(n, 1);
    sum += x;
    sq += x * x;
  }
  m.total = sum;
  m.queue /= std::max(n, 1);
  m.jain = sq > 0 ? sum * sum / (static_cast<double>(m.flow.size()) * sq) : 0;
  return m;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary);
    out << text;
    if (!out) throw Error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

} // namespace

int main(int argc, char** argv) try {
  const std::string cluster = argc > 1 ? argv[1] : "megascale-ampere";
  const std::filesystem::path outdir = argc > 2 ? argv[2] : ".";
  std::filesystem::create_directories(outdir);
  const topology::ClusterSpec c = config::load_cluster(cluster);
  const topology::NetworkCcSpec base = config::load_cluster_network(cluster);
  const double line = c.server.nic_bw_bytes_per_s;
  bench::Stopwatch clock;
  std::ostringstream cases;
  cases << "case,controller,n,throughput_gbit_s,jain,queue_kb,victim_gbit_s,predicted,measured,error_pct\n";
  auto row = [&](const char* kase, CongestionControl cc, int n, const Means& m, double victim, double predicted,
                 double measured) {
    char buf[512];
    const double err = predicted > 0 ? 100 * (measured - predicted) / predicted : 0;
    std::snprintf(buf, sizeof buf, "%s,%s,%d,%.2f,%.4f,%.1f,%.2f,%.6g,%.6g,%.2f\n", kase,
                  topology::congestion_control_name(cc), n, m.total * 8 / 1e9, m.jain, m.queue / 1e3, victim * 8 / 1e9,
                  predicted, measured, err);
    cases << buf;
    std::fputs(buf, stdout);
  };
  std::fputs("case,controller,n,throughput_gbit_s,jain,queue_kb,victim_gbit_s,predicted,measured,error_pct\n", stdout);
  for (CongestionControl cc : kAll) {
    topology::NetworkCcSpec spec = base;
    spec.congestion_control = cc;
    for (int n : {2, 4, 8, 16}) {
      const FluidFabric fab = incast_fabric(n, line);
      FluidOptions o;
      o.end_s = cc == CongestionControl::Dcqcn ? 0.15 : 0.03;
      o.sample_every_s = 100e-6;
      const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
      const Means m = means(r, static_cast<uint32_t>(n), o.end_s - 0.02);
      double predicted = 0, measured = 0; // the standing queue, bytes
      if (cc == CongestionControl::Dcqcn) {
        predicted = dcqcn_fixed_point(spec.dcqcn, spec.mtu_bytes, line, n).queue_bytes;
        measured = m.queue;
      } else if (cc == CongestionControl::Swift) {
        predicted = swift_equilibrium_rtt_s(spec.swift, spec.mtu_bytes, line, n, 1);
        measured = o.base_rtt_s + m.queue / line;
      }
      row("incast", cc, n, m, 0, predicted, measured);
    }
    for (bool storm : {false, true}) {
      FluidFabric fab = victim_fabric(3, line);
      if (storm) fab.ports[VictimLayout::kBottleneck].capacity_changes = {{0.01, 0.0}, {0.02, 1.0}};
      FluidOptions o;
      o.end_s = 0.02;
      o.sample_every_s = 100e-6;
      const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
      const Means m = means(r, VictimLayout::kBottleneck, storm ? 0.011 : 0.005);
      const bool pfc_pred = cc == CongestionControl::None && !storm;
      row(storm ? "pfc_storm" : "pfc_victim", cc, 4, m, m.flow.back(), pfc_pred ? line / 4 : 0,
          pfc_pred ? m.flow.back() : 0);
    }
  }
  for (CongestionControl cc : kAll) {
    topology::NetworkCcSpec spec = base;
    spec.congestion_control = cc;
    CcPenaltyTable table(spec, line);
    for (int n : {2, 4, 8}) {
      const double factor = table.byte_factor(n, 16.0 * (1 << 20));
      row("collision_16MiB", cc, n, Means{}, 0, 0, factor);
    }
  }
  {
    // DCQCN convergence after a join (n = 2): the time for the rate gap to fall from 10 %
    // to 1 % of C, against ln(10) / λ of the linearised fluid model (dcqcn_equations.hpp).
    topology::NetworkCcSpec spec = base;
    spec.congestion_control = CongestionControl::Dcqcn;
    const FluidFabric fab = incast_fabric(2, line, {0, 0.02});
    FluidOptions o;
    o.end_s = 0.5;
    o.sample_every_s = 100e-6;
    const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
    double t10 = -1, t1 = -1;
    for (const auto& smp : r.samples) {
      if (smp.t_s <= 0.021) continue;
      const double gap = std::abs(smp.rate[0] - smp.rate[1]) / line;
      if (t10 < 0 && gap <= 0.10) t10 = smp.t_s;
      if (t1 < 0 && gap <= 0.01) t1 = smp.t_s;
    }
    const double predicted = std::log(10.0) / dcqcn_convergence(spec.dcqcn, spec.mtu_bytes, line, 2).decay_per_s;
    row("join_gap_10_to_1pct_s", CongestionControl::Dcqcn, 2, Means{}, 0, predicted,
        t1 > t10 && t10 > 0 ? t1 - t10 : -1);
  }
  std::ostringstream join;
  join << "controller,t_ms,rate0_gbit_s,rate1_gbit_s,queue_kb\n";
  for (CongestionControl cc : kAll) {
    topology::NetworkCcSpec spec = base;
    spec.congestion_control = cc;
    const FluidFabric fab = incast_fabric(2, line, {0, 0.005});
    FluidOptions o;
    o.end_s = 0.06;
    o.sample_every_s = 50e-6;
    const FluidResult r = FluidModel(spec, fab.ports, fab.flows, o).run();
    for (const auto& s : r.samples) {
      char buf[256];
      std::snprintf(buf, sizeof buf, "%s,%.3f,%.3f,%.3f,%.2f\n", topology::congestion_control_name(cc), s.t_s * 1e3,
                    s.rate[0] * 8 / 1e9, s.rate[1] * 8 / 1e9, s.queue[2] / 1e3);
      join << buf;
    }
  }
  write_file(outdir / "cases.csv", cases.str());
  write_file(outdir / "join.csv", join.str());
  bench::report("congestion.all_cases_s", clock.seconds(), "s");
  bench::report("congestion.peak_rss", bench::peak_rss_mib(), "MiB");
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_congestion: %s\n", e.what());
  return 1;
}
