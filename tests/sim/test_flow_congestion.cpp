// Congestion control in the flow engine (sim/congestion/flow_congestion.hpp): a job
// whose flows never share a network link runs exactly as without CC; one whose rings
// collide on ToR uplinks is slower with DCQCN than with max-min sharing alone.
#include <catch2/catch.hpp>

#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

/// Ring all-reduces of 256 MB over 4 servers of tiny-2tier, one ring per local GPU given.
SimReport run_rings(const std::vector<int64_t>& locals, topology::CongestionControl cc) {
  const auto spec = tiny_cluster();
  const topology::Fabric fabric(spec);
  ProgramBuilder b;
  const auto c = b.add(compute(1e-3, spec.gpu.hbm_bw_bytes_per_s));
  b.add(collective(OpKind::AllReduce, GroupKind::Dp, 256e6, Stream::DpComm), {c});
  const auto tp = static_cast<int64_t>(locals.size());
  std::vector<int64_t> gpus;
  for (int64_t s = 0; s < 4; ++s)
    for (int64_t l : locals) gpus.push_back(s * 8 + l);
  const auto schedule = make_schedule({tp, 4, 1}, {b.take()}, std::vector<uint32_t>(gpus.size(), 0));
  SimOptions o = exact_options(SimMode::Flow);
  o.network.congestion_control = cc;
  return simulate(schedule, fabric, gpus, o);
}

} // namespace

TEST_CASE("Flow engine CC: no shared link, no cost; collisions cost with DCQCN", "[congestion]") {
  using topology::CongestionControl;
  // One ring: every network link carries one flow at a time.
  const double lone = run_rings({0}, CongestionControl::None).iteration_time_s;
  CHECK(run_rings({0}, CongestionControl::Dcqcn).iteration_time_s == Approx(lone).epsilon(1e-12));
  // Four rings on rail 0 (NICs 0, 2, 4, 6): their flows meet on the ToR uplinks.
  const double maxmin = run_rings({0, 2, 4, 6}, CongestionControl::None).iteration_time_s;
  const double dcqcn = run_rings({0, 2, 4, 6}, CongestionControl::Dcqcn).iteration_time_s;
  CHECK(dcqcn > maxmin * 1.001);
  CHECK(dcqcn < maxmin * 1.5);
}
