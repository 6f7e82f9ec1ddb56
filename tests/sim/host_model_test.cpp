// The host's time per framework module call (schedule.host_seconds_per_module): the host
// issues a rank's ops in program order, so a chain of short GEMMs waits for the host (the
// CPU-bound regime) while long ones hide it; and a chunk of an overlapped GEMM counts the
// waves of all chunks (the device model's efficiency of the whole GEMM).
#include <catch2/catch.hpp>

#include "sim/device_model.hpp"
#include "sim_test_util.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {
/// One rank: `n` GEMMs of `seconds` each in a chain on the compute stream.
schedules::Schedule gemm_chain(int n, double seconds, double hbm_bw) {
  ProgramBuilder b;
  uint32_t prev = 0;
  for (int i = 0; i < n; ++i) {
    schedules::Op op = compute(seconds, hbm_bw);
    op.kernel = schedules::Kernel::Gemm;
    op.kind = schedules::OpKind::Gemm;
    prev = i == 0 ? b.add(op) : b.add(op, {prev});
  }
  std::vector<schedules::Program> programs;
  programs.push_back(b.take());
  return make_schedule({1, 1, 1}, std::move(programs), {0});
}
} // namespace

TEST_CASE("host model: GEMMs shorter than the host's time per call wait for the host, longer ones hide it",
          "[sim][device]") {
  const topology::ClusterSpec cluster = tiny_cluster();
  const topology::Fabric fabric(cluster);
  const double bw = cluster.gpu.hbm_bw_bytes_per_s;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    INFO((mode == SimMode::Analytic ? "analytic" : "flow"));
    const SimOptions o = exact_options(mode);
    schedules::Schedule fast = gemm_chain(10, 1e-4, bw);
    CHECK(simulate(fast, fabric, {0}, o).iteration_time_s == Approx(1e-3).epsilon(1e-6));
    fast.job.options.host_seconds_per_module = 3e-4; // each call takes longer on the host than on the GPU
    // the host reaches op i at (i + 1)·0.3 ms; the last one ends 0.1 ms later
    CHECK(simulate(fast, fabric, {0}, o).iteration_time_s == Approx(10 * 3e-4 + 1e-4).epsilon(1e-6));
    schedules::Schedule slow = gemm_chain(10, 1e-3, bw);
    slow.job.options.host_seconds_per_module = 3e-4; // the GPU is the bottleneck: only the first op waits
    CHECK(simulate(slow, fabric, {0}, o).iteration_time_s == Approx(3e-4 + 10 * 1e-3).epsilon(1e-6));
  }
}

TEST_CASE("host model: FP8 jobs take the host time per FP8 module call, BF16 jobs the other", "[sim][device]") {
  const topology::ClusterSpec cluster = tiny_cluster();
  const topology::Fabric fabric(cluster);
  const SimOptions o = exact_options(SimMode::Analytic);
  schedules::Schedule s = gemm_chain(10, 1e-4, cluster.gpu.hbm_bw_bytes_per_s);
  s.job.options.host_seconds_per_fp8_module = 3e-4; // BF16 GEMMs: not this one
  CHECK(simulate(s, fabric, {0}, o).iteration_time_s == Approx(1e-3).epsilon(1e-6));
  s.job.options.gemm_precision = schedules::GemmPrecision::Fp8;
  CHECK(s.job.options.host_seconds_per_call() == 3e-4);
  CHECK(simulate(s, fabric, {0}, o).iteration_time_s == Approx(10 * 3e-4 + 1e-4).epsilon(1e-6));
  s.job.options.host_seconds_per_fp8_module = 0; // falls back to the BF16 figure
  s.job.options.host_seconds_per_module = 2e-4;
  CHECK(simulate(s, fabric, {0}, o).iteration_time_s == Approx(10 * 2e-4 + 1e-4).epsilon(1e-6));
}

TEST_CASE("device model: a chunk of an overlapped GEMM runs at the efficiency of the whole GEMM", "[sim][device]") {
  const topology::ClusterSpec cluster = tiny_cluster();
  DeviceModelParams p;
  p.gemm_max_efficiency = 0.8;
  p.gemm_half_dim = 0;
  p.gemm_tile_m = 128;
  p.gemm_tile_n = 128;
  p.sms = 100;
  p.hbm_efficiency = 1;
  p.vector_flop_efficiency = 1;
  const DeviceModel device(cluster.gpu, p, nullptr);
  // 8 chunks of 128 rows: one tile row each (1 wave of 10 tiles on 100 SMs: 10 %); the
  // whole 1,024-row GEMM has 80 tiles in one wave (80 %)
  schedules::Op chunk;
  chunk.kind = schedules::OpKind::Gemm;
  chunk.kernel = schedules::Kernel::Gemm;
  chunk.shape = {128, 1280, 4096, 0};
  chunk.flops = 2.0 * 128 * 1280 * 4096;
  const double alone = device.seconds(chunk);
  chunk.shape[3] = 8;
  const double together = device.seconds(chunk);
  CHECK(together < alone);
  CHECK(device.gemm_efficiency(1024, 1280, 4096) / device.gemm_efficiency(128, 1280, 4096) == Approx(8.0));
}
