// The device model reads every figure from the GPU's catalogue entry and applies wave
// quantisation, the sustained clock, one launch per lowered op and the NCCL SM share.
#include <catch2/catch.hpp>

#include "config/hardware_catalogue.hpp"
#include "sim/device_model.hpp"
#include "sim/error.hpp"
#include "sim/speed_variation.hpp"

using namespace twinscale;
using sim::DeviceModel;
using sim::DeviceModelParams;

namespace {

const topology::GpuSpec& a100() { return *config::hardware_catalogue().gpu("A100-SXM-80GB"); }

schedules::Op gemm(int64_t m, int64_t n, int64_t k) {
  schedules::Op op;
  op.kind = schedules::OpKind::Gemm;
  op.kernel = schedules::Kernel::Gemm;
  op.flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  op.bytes = 2.0 * static_cast<double>(m * k + k * n + m * n);
  op.shape = {m, n, k, 0};
  return op;
}

} // namespace

TEST_CASE("device model: figures come from the catalogue", "[sim][device]") {
  const auto p = DeviceModelParams::from_gpu(a100());
  CHECK(p.gemm_max_efficiency == Approx(a100().kernels.gemm_max_efficiency));
  CHECK(p.sms == 108);
  CHECK(p.kernel_launch_s == Approx(4e-6));
  // 2 channels × 1 SM of 108 → 2/106; HBM share 0.05 → 0.05/0.95 is larger.
  CHECK(DeviceModelParams::nccl_slowdown(a100(), 2) == Approx(0.05 / 0.95));
  CHECK(DeviceModelParams::nccl_slowdown(a100(), 16) == Approx(16.0 / 92.0));
}

TEST_CASE("device model: wave quantisation over the SM count", "[sim][device]") {
  const DeviceModel d(a100(), DeviceModelParams::from_gpu(a100()));
  // 256×128 tiles: 108 tiles fill one wave exactly; 109 need two waves.
  CHECK(d.wave_efficiency(256 * 108, 128) == Approx(1.0));
  CHECK(d.wave_efficiency(256 * 109, 128) == Approx(109.0 / 216.0));
  CHECK(d.wave_efficiency(256, 128) == Approx(1.0 / 108.0));
  // GPT-175B's QKV GEMM at TP 8: 2,048 tokens × 4,608 → 8 × 36 = 288 tiles in 3 waves.
  CHECK(d.wave_efficiency(2048, 4608) == Approx(288.0 / 324.0));
  const double t_full = d.seconds(gemm(256 * 108, 128, 8192));
  const double t_more = d.seconds(gemm(256 * 109, 128, 8192));
  CHECK(t_more > 1.8 * t_full); // one more row of tiles costs a whole extra wave
  auto no_waves = DeviceModelParams::from_gpu(a100());
  no_waves.sms = 0;
  CHECK(DeviceModel(a100(), no_waves).wave_efficiency(256 * 109, 128) == 1.0);
}

TEST_CASE("device model: sustained clock and launches", "[sim][device]") {
  auto p = DeviceModelParams::from_gpu(a100());
  p.kernel_launch_s = 0;
  p.sustained_clock_ratio = 1.0;
  const auto big = gemm(256 * 108, 128 * 32, 8192);
  const double t1 = DeviceModel(a100(), p).seconds(big);
  p.sustained_clock_ratio = 0.9;
  CHECK(DeviceModel(a100(), p).seconds(big) == Approx(t1 / 0.9));
  // One launch per lowered op: an unfused LayerNorm pass is one kernel.
  CHECK(DeviceModel::kernel_launches(schedules::Kernel::LayerNorm, schedules::Phase::Forward) == 1);
  CHECK(DeviceModel::kernel_launches(schedules::Kernel::Gelu, schedules::Phase::Backward) == 1);
  CHECK(DeviceModel::kernel_launches(schedules::Kernel::CrossEntropy, schedules::Phase::Forward) == 1);
  CHECK(DeviceModel::kernel_launches(schedules::Kernel::AttentionUnfused, schedules::Phase::Backward) == 5);
}

TEST_CASE("device model: FlashAttention-2's backward executes 2.5 × the forward's FLOPs, as its benchmarks count",
          "[sim][device]") {
  auto p = DeviceModelParams::from_gpu(a100());
  p.kernel_launch_s = 0;
  p.flash.bwd_efficiency = p.flash.fwd_efficiency; // isolate the FLOP convention
  const DeviceModel d(a100(), p);
  schedules::Op fwd;
  fwd.kind = schedules::OpKind::Attention;
  fwd.kernel = schedules::Kernel::FlashAttention2;
  fwd.flops = 4.0 * 32 * 4096 * 4096 * 128; // 4·b·heads·s²·head_dim
  fwd.bytes = 1e6;
  fwd.shape = {32, 4096, 128, 0};
  fwd.labels.phase = schedules::Phase::Forward;
  schedules::Op bwd = fwd;
  bwd.flops = 2 * fwd.flops; // the op carries model FLOPs: 2 × forward
  bwd.labels.phase = schedules::Phase::Backward;
  CHECK(d.seconds(bwd) == Approx(2.5 * d.seconds(fwd)));
  // causal: half the dense FLOPs, at the catalogue's forward rate
  CHECK(d.seconds(fwd) ==
        Approx(0.5 * fwd.flops / (a100().peak_flops * p.sustained_clock_ratio * p.flash.fwd_efficiency)));
}

TEST_CASE("device model: FlashAttention's rate by keys per query and mask, anchored at the quoted 4,096",
          "[sim][device]") {
  const topology::GpuSpec& h100 = *config::hardware_catalogue().gpu("H100-SXM");
  auto p = DeviceModelParams::from_gpu(h100);
  p.kernel_launch_s = 0;
  const DeviceModel d(h100, p);
  const double peak = h100.peak_flops * p.sustained_clock_ratio;
  auto attention = [](int64_t seq, int64_t window) {
    schedules::Op op;
    op.kind = schedules::OpKind::Attention;
    op.kernel = schedules::Kernel::FlashAttention2;
    op.flops = 4.0 * 32 * static_cast<double>(seq) * static_cast<double>(seq) * 128; // model FLOPs: every key
    op.bytes = 1;
    op.shape = {32, seq, 128, window};
    op.labels.phase = schedules::Phase::Forward;
    return op;
  };
  // causal over 4,096 keys: the catalogue's figure as quoted (FA3 paper Figure 5: 319 TFLOP/s)
  const auto at4k = attention(4096, 0);
  CHECK(d.seconds(at4k) == Approx(0.5 * at4k.flops / (peak * p.flash.fwd_efficiency)));
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 4096, false) ==
        Approx(p.flash.fwd_efficiency));
  // the curve L/(L + 408) through the same paper's causal rates: 195 vs 191 at 512, 334 vs
  // 333 at 8k, 342 vs 335 at 16k (TFLOP/s at the chart's clock, fraction × 989.4)
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 512, false) * 989.4 ==
        Approx(191).epsilon(0.03));
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 8192, false) * 989.4 ==
        Approx(333).epsilon(0.01));
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 16384, false) * 989.4 ==
        Approx(335).epsilon(0.03));
  // the rate grows with the keys, in both passes
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, true, 2048, false) <
        d.attention_efficiency(schedules::Kernel::FlashAttention2, true, 4096, false));
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, true, 16384, false) >
        d.attention_efficiency(schedules::Kernel::FlashAttention2, true, 4096, false));
  // an unmasked block (a ring step's, shape[3] = keys per query) executes its own s·w scores
  // at the unmasked rate: half of a 4,096 block, w = 2,048
  const auto ring_step = attention(4096, 2048);
  CHECK(d.seconds(ring_step) ==
        Approx(0.5 * ring_step.flops /
               (peak * d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 2048, false) * 1.10)));
  CHECK(d.attention_efficiency(schedules::Kernel::FlashAttention2, false, 8192, true) * 989.4 ==
        Approx(370).epsilon(0.02)); // unmasked 8k: 370
  // a GPU without the figures (A100): one rate at every length and mask, as before
  const DeviceModel a(a100(), DeviceModelParams::from_gpu(a100()));
  CHECK(a.attention_efficiency(schedules::Kernel::FlashAttention2, false, 512, false) ==
        a100().kernels.flash.fwd_efficiency);
  CHECK(a.attention_efficiency(schedules::Kernel::FlashAttention2, true, 65536, true) ==
        a100().kernels.flash.bwd_efficiency);
}

TEST_CASE("device model: cuDNN's fused attention has its own rates, refused where the catalogue has none",
          "[sim][device]") {
  const auto attention = [](schedules::Kernel kernel, int64_t seq) {
    schedules::Op op;
    op.kind = schedules::OpKind::Attention;
    op.kernel = kernel;
    op.flops = 4.0 * 32 * static_cast<double>(seq) * static_cast<double>(seq) * 128;
    op.bytes = 1;
    op.shape = {32, seq, 128, 0};
    op.labels.phase = schedules::Phase::Forward;
    return op;
  };
  const topology::GpuSpec& h100 = *config::hardware_catalogue().gpu("H100-SXM");
  auto p = DeviceModelParams::from_gpu(h100);
  p.kernel_launch_s = 0;
  const DeviceModel d(h100, p);
  using schedules::Kernel;
  // the FlashAttention-3 paper's cuDNN bars (H100, head dim 128, causal forward): 518 TFLOP/s
  // at 4k as quoted, the curve within 3.2 % of 315 at 512 and 539 at 16k
  CHECK(d.attention_efficiency(Kernel::CudnnAttention, false, 4096, false) * 989.4 == Approx(518).epsilon(0.01));
  CHECK(d.attention_efficiency(Kernel::CudnnAttention, false, 512, false) * 989.4 == Approx(315).epsilon(0.033));
  CHECK(d.attention_efficiency(Kernel::CudnnAttention, false, 16384, false) * 989.4 == Approx(539).epsilon(0.033));
  // cuDNN 9.1's causal backward at 4k, 444 TFLOP/s (cudnn-frontend's benchmark)
  CHECK(d.attention_efficiency(Kernel::CudnnAttention, true, 4096, false) * 989.4 == Approx(444).epsilon(0.01));
  CHECK(d.attention_efficiency(Kernel::FlashAttention2, false, 4096, false) == Approx(p.flash.fwd_efficiency));
  // the same op shape runs 518 / 319 faster on cuDNN's kernel
  const auto flash = attention(Kernel::FlashAttention2, 4096), cudnn = attention(Kernel::CudnnAttention, 4096);
  CHECK(d.seconds(flash) / d.seconds(cudnn) == Approx(0.52 / 0.32));
  // B200: FlashAttention-2 has no Blackwell kernels (348 TFLOP/s at 4k), cuDNN's 897 and
  // ramps up to 1,435 at 32k (cudnn-frontend's B200 benchmark, cuDNN 9.10.2)
  const topology::GpuSpec& b200 = *config::hardware_catalogue().gpu("B200");
  const DeviceModel b(b200, DeviceModelParams::from_gpu(b200));
  CHECK(b.attention_efficiency(Kernel::FlashAttention2, false, 4096, false) * 2250 == Approx(348).epsilon(0.01));
  CHECK(b.attention_efficiency(Kernel::CudnnAttention, false, 4096, false) * 2250 == Approx(897).epsilon(0.01));
  CHECK(b.attention_efficiency(Kernel::CudnnAttention, false, 32768, false) * 2250 == Approx(1435).epsilon(0.02));
  // A100 has no cuDNN figures (Transformer Engine runs FlashAttention-2 on sm80): refused,
  // naming the GPU, the key and the way out
  const DeviceModel a(a100(), DeviceModelParams::from_gpu(a100()));
  CHECK_THROWS_AS(a.seconds(attention(Kernel::CudnnAttention, 2048)), sim::SimError);
  CHECK_THROWS_WITH(a.seconds(attention(Kernel::CudnnAttention, 2048)),
                    Catch::Contains("A100-SXM-80GB") && Catch::Contains("cudnn_attention_fwd_efficiency") &&
                        Catch::Contains("flash-attn-2"));
  // a forward figure without a backward one is refused as a whole, as the scenario does
  DeviceModelParams half = DeviceModelParams::from_gpu(a100());
  half.cudnn.fwd_efficiency = 0.5;
  const DeviceModel h(a100(), half);
  CHECK_THROWS_WITH(h.seconds(attention(Kernel::CudnnAttention, 2048)),
                    Catch::Contains("cudnn_attention_bwd_efficiency"));
}

TEST_CASE("device model: the tensor clock is the one sustained at the power limit", "[sim][device]") {
  // Both are estimated parameters of the validation set (docs/fidelity.md), inside their
  // bounds. H100's: the span of its sources (0.85–0.95), from section F; H200 states the same.
  const double h = config::hardware_catalogue().gpu("H100-SXM")->kernels.sustained_clock_ratio;
  CHECK(h == Approx(0.86));
  CHECK(h >= 0.85);
  CHECK(h <= 0.95);
  CHECK(config::hardware_catalogue().gpu("H200-SXM")->kernels.sustained_clock_ratio == h);
  // A100's: NVIDIA's HPL Rpeak clock at 400 W (1,305 of 1,410 MHz) and the boost clock,
  // from sections A, D and E
  const double a = a100().kernels.sustained_clock_ratio;
  CHECK(a == Approx(0.935));
  CHECK(a >= 1305.0 / 1410.0);
  CHECK(a <= 1.0);
  CHECK(config::hardware_catalogue().gpu("A100-SXM-40GB")->kernels.sustained_clock_ratio == a);
  // B200's is measured, not estimated: a tensor-core-bound kernel run back to back falls
  // from 1,450 to 1,237 TFLOP/s at the 1,000 W limit (flashinfer-ai/flashinfer#2899), and
  // a B200 GEMM is costed at that rate; GB200 (1,200 W) has no such reading.
  const topology::GpuSpec b200 = *config::hardware_catalogue().gpu("B200");
  CHECK(b200.kernels.sustained_clock_ratio == Approx(1237.0 / 1450.0).epsilon(1e-3));
  CHECK(config::hardware_catalogue().gpu("GB200")->kernels.sustained_clock_ratio == 1.0);
  const DeviceModel m(b200, DeviceModelParams::from_gpu(b200));
  const schedules::Op g = gemm(8192, 8192, 8192);
  CHECK(m.seconds(g) == Approx(g.flops / (b200.peak_flops * 0.853 * m.gemm_efficiency(8192, 8192, 8192)) +
                               b200.kernels.kernel_launch_s));
}

TEST_CASE("speed variation: the slowest of N GPUs, deterministic, growing with N", "[sim][device]") {
  CHECK(sim::slowest_gpu_factor(1024, 0.0, 1) == 1.0);
  const double a = sim::slowest_gpu_factor(3072, 0.013, 7);
  CHECK(a == sim::slowest_gpu_factor(3072, 0.013, 7)); // same seed, same draw
  // Expected maximum of n standard normals: ≈ 2.0 at 32, ≈ 3.4 at 3,072 (averaged over seeds).
  double small = 0, large = 0;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    small += (sim::slowest_gpu_factor(32, 1.0, seed) - 1) / 40;
    large += (sim::slowest_gpu_factor(3072, 1.0, seed) - 1) / 40;
  }
  CHECK(small == Approx(2.04).margin(0.2));
  CHECK(large == Approx(3.4).margin(0.2));
  // The device model scales every compute op by the factor.
  auto p = DeviceModelParams::from_gpu(a100());
  const double t = DeviceModel(a100(), p).seconds(gemm(4096, 4096, 4096));
  p.compute_time_factor = a;
  CHECK(DeviceModel(a100(), p).seconds(gemm(4096, 4096, 4096)) == Approx(t * a));
}

TEST_CASE("speed variation: a fraction of slow hosts", "[sim][device]") {
  // no slow hosts: exactly the draws of the plain order statistic
  CHECK(sim::slowest_gpu_factor(3072, 0.013, 7, {}) == sim::slowest_gpu_factor(3072, 0.013, 7));
  // every host slow by 1.2: every GPU's multiplier × 1.2
  const double all = sim::slowest_gpu_factor(64, 0.013, 7, {1.0, 1.2, 8});
  CHECK(all == Approx(1.2 * sim::slowest_gpu_factor(64, 0.013, 7)));
  // without GPU variation: the factor when at least one host is slow, else 1
  const double some = sim::slowest_gpu_factor(1024, 0.0, 3, {0.05, 1.5, 8});
  CHECK(some == 1.5); // 128 hosts at 5 %: P(none slow) = 0.95^128 ≈ 0.1 %
  CHECK(sim::slowest_gpu_factor(8, 0.0, 3, {0.0, 1.5, 8}) == 1.0);
  CHECK_THROWS_AS(sim::slowest_gpu_factor(8, 0.013, 1, {1.5, 1.2, 8}), sim::SimError);
  CHECK_THROWS_AS(sim::slowest_gpu_factor(8, 0.013, 1, {0.1, 0.9, 8}), sim::SimError);
  CHECK_THROWS_AS(sim::slowest_gpu_factor(8, 0.013, 1, {0.1, 1.2, 0}), sim::SimError);
}

TEST_CASE("communication CTAs: the compute rate by the CTAs running, one table per GPU", "[sim][device]") {
  const auto f = sim::comm_rate_factors(a100(), std::nullopt);
  REQUIRE(f.size() == 256);
  CHECK(f[0] == 1.0);
  // a ring's copies take 5 % of HBM on A100: up to 5 CTAs of 108 SMs the HBM share binds
  CHECK(f[2] == 1.0 / (1.0 + DeviceModelParams::nccl_slowdown(a100(), 2)));
  CHECK(f[2] == f[5]);
  // 16 CTAs (a data-parallel group of all 8 GPUs of DGX A100 servers): 16 / 92 slower
  CHECK(f[16] == Approx(1.0 / (1.0 + 16.0 / 92.0)));
  CHECK(f[24] < f[16]);
  // a fixed slowdown (what-if) applies to any count
  const auto fixed = sim::comm_rate_factors(a100(), 0.25);
  CHECK(fixed[1] == 1.0 / 1.25);
  CHECK(fixed[200] == 1.0 / 1.25);
}
