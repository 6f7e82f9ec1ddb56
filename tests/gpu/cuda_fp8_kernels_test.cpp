// The FP8 kernels of backend/cuda/fp8_kernels.cu and the cuBLASLt FP8 GEMM of
// backend/cuda/fp8_gemm.hpp on a real GPU, against values computed here: the cast
// (saturating, scaled, amax folded) and its tiled transpose over edge tiles, the
// transpose of an FP8 tensor, the delayed-scaling update, the probe's transfer patterns,
// and FP8 GEMMs forward (E4M3 × E4M3) and backward (E5M2 × E4M3) with inverse scales.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include "backend/cuda/fp8_gemm.hpp"
#include "backend/cuda/fp8_kernels.hpp"
#include "tests/skip.hpp"

using namespace twinscale::backend;
using namespace twinscale::backend::cuda;

namespace {

struct DeviceBuffer {
  void* p = nullptr;
  explicit DeviceBuffer(size_t bytes) {
    REQUIRE(cudaMalloc(&p, bytes) == cudaSuccess);
    REQUIRE(cudaMemset(p, 0, bytes) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(p); }
  template <typename T>
  std::vector<T> read(size_t n) const {
    std::vector<T> v(n);
    REQUIRE(cudaMemcpy(v.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return v;
  }
  template <typename T>
  void write(const std::vector<T>& v) {
    REQUIRE(cudaMemcpy(p, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
};

uint16_t float_to_bf16(float f) { // exact for the small integers used here
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  return static_cast<uint16_t>(bits >> 16);
}

float bf16_to_float(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

/// OCP FP8 E4M3 (bias 7) and E5M2 (bias 15), finite values.
float fp8_to_float(uint8_t v, bool e5m2) {
  const int mbits = e5m2 ? 2 : 3, bias = e5m2 ? 15 : 7;
  const int e = (v >> mbits) & (e5m2 ? 0x1F : 0xF), m = v & ((1 << mbits) - 1);
  const float mag = e == 0 ? std::ldexp(static_cast<float>(m), 1 - bias - mbits)
                           : std::ldexp(1.0f + static_cast<float>(m) / static_cast<float>(1 << mbits), e - bias);
  return (v & 0x80) ? -mag : mag;
}

int compute_capability() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return 0;
  return p.major * 10 + p.minor;
}

} // namespace

TEST_CASE("cuda fp8 kernels: cast with transpose over edge tiles, amax, and the transpose of an FP8 tensor") {
  const int64_t rows = 48, cols = 80, n = rows * cols; // tiles of 32 with ragged edges
  std::vector<uint16_t> x(static_cast<size_t>(n));
  float largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float v = static_cast<float>(i % 17 - 8);
    x[static_cast<size_t>(i)] = float_to_bf16(v);
    largest = std::max(largest, std::fabs(v));
  }
  DeviceBuffer dx(2 * n), dy(n), dyt(n), dyt2(n), scale(sizeof(float)), amax(sizeof(float));
  dx.write(x);
  scale.write(std::vector<float>{2.0f});
  for (bool e5m2 : {false, true}) {
    INFO((e5m2 ? "E5M2" : "E4M3"));
    REQUIRE(launch_fp8_cast(Fp8CastMode::CastTranspose, e5m2, dx.p, dy.p, dyt.p, rows, cols,
                            static_cast<const float*>(scale.p), static_cast<float*>(amax.p), nullptr) == 0);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    const auto y = dy.read<uint8_t>(static_cast<size_t>(n)), yt = dyt.read<uint8_t>(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const size_t i = static_cast<size_t>(r * cols + c);
        CHECK(fp8_to_float(y[i], e5m2) == 2 * bf16_to_float(x[i])); // |2x| ≤ 16: exact in both formats
        CHECK(yt[static_cast<size_t>(c * rows + r)] == y[i]);
      }
    CHECK(amax.read<float>(1)[0] == largest);
    // the FP8 tensor's transpose alone gives the same bytes
    REQUIRE(launch_fp8_cast(Fp8CastMode::Transpose, e5m2, dy.p, nullptr, dyt2.p, rows, cols, nullptr, nullptr,
                            nullptr) == 0);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    CHECK(dyt2.read<uint8_t>(static_cast<size_t>(n)) == yt);
  }
}

TEST_CASE("cuda fp8 kernels: a cast saturates at the format's largest finite value") {
  DeviceBuffer dx(2 * 4), dy(4), scale(sizeof(float)), amax(sizeof(float));
  dx.write(std::vector<uint16_t>{float_to_bf16(1000), float_to_bf16(-1000), float_to_bf16(1), float_to_bf16(0)});
  scale.write(std::vector<float>{1.0f});
  REQUIRE(launch_fp8_cast(Fp8CastMode::Cast, false, dx.p, dy.p, nullptr, 1, 4, static_cast<const float*>(scale.p),
                          static_cast<float*>(amax.p), nullptr) == 0);
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  const auto y = dy.read<uint8_t>(4);
  CHECK(fp8_to_float(y[0], false) == 448);
  CHECK(fp8_to_float(y[1], false) == -448);
  CHECK(fp8_to_float(y[2], false) == 1);
  CHECK(amax.read<float>(1)[0] == 1000);
}

TEST_CASE("cuda fp8 kernels: the delayed-scaling update rolls the history and scales by its maximum") {
  const int64_t tensors = 3, len = 4;
  DeviceBuffer from(tensors * len * 4), to(tensors * len * 4), amax(tensors * 4), scale(tensors * 4), inv(tensors * 4);
  amax.write(std::vector<float>{2, 0, 448});
  auto update = [&](DeviceBuffer& a, DeviceBuffer& b) {
    REQUIRE(launch_fp8_scale_update(static_cast<float*>(a.p), static_cast<float*>(b.p), static_cast<float*>(amax.p),
                                    static_cast<float*>(scale.p), static_cast<float*>(inv.p), tensors, len, 448,
                                    nullptr) == 0);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  };
  update(from, to);
  CHECK(to.read<float>(tensors * len) == std::vector<float>{2, 0, 0, 0, 0, 0, 0, 0, 448, 0, 0, 0});
  CHECK(scale.read<float>(tensors) == std::vector<float>{224, 1, 1});
  CHECK(inv.read<float>(tensors) == std::vector<float>{1.0f / 224, 1, 1});
  CHECK(amax.read<float>(tensors) == std::vector<float>{0, 0, 0});
  amax.write(std::vector<float>{1, 4, 0});
  update(to, from); // the next iteration: histories [1, 2, 0, 0], [4, 0, 0, 0], [0, 448, 0, 0]
  CHECK(from.read<float>(tensors * len) == std::vector<float>{1, 2, 0, 0, 4, 0, 0, 0, 0, 448, 0, 0});
  CHECK(scale.read<float>(tensors) == std::vector<float>{224, 112, 1});
}

TEST_CASE("cuda fp8 kernels: the probe's transfer patterns count every element that differs") {
  const int64_t n = 1000, per = 100;
  DeviceBuffer y(2 * n), bad(sizeof(unsigned long long));
  REQUIRE(launch_pattern_fill(y.p, n, per, 0, true, nullptr) == 0);
  auto wrong = [&](float value, bool by_chunk) {
    REQUIRE(cudaMemset(bad.p, 0, sizeof(unsigned long long)) == cudaSuccess);
    REQUIRE(launch_pattern_check(y.p, n, per, value, by_chunk, static_cast<unsigned long long*>(bad.p), nullptr) == 0);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    return bad.read<unsigned long long>(1)[0];
  };
  CHECK(wrong(0, true) == 0);
  CHECK(wrong(1, false) == 900); // only chunk 0 holds 1
  REQUIRE(launch_pattern_fill(y.p, n, per, 7, false, nullptr) == 0);
  CHECK(wrong(7, false) == 0);
}

TEST_CASE("cuda fp8 gemm: E4M3 forward and E5M2 backward on cuBLASLt, scaled, padded shapes") {
  if (compute_capability() < 89) TWINSCALE_SKIP("FP8 GEMMs need compute capability 8.9");
  Fp8Gemms gemms;
  for (auto [m, n, k] : {std::array<int64_t, 3>{64, 64, 64}, std::array<int64_t, 3>{50, 30, 20}}) {
    const auto [mp, np, kp] = padded_fp8_dims(m, n, k);
    for (bool backward : {false, true}) {
      INFO("m " << m << " n " << n << " k " << k << (backward ? " backward" : " forward"));
      DeviceBuffer a(static_cast<size_t>(mp * kp)), b(static_cast<size_t>(kp * np)),
          c(static_cast<size_t>(2 * mp * np)), inv(2 * sizeof(float));
      // 1.0 in every operand element: E4M3 0x38, E5M2 0x3C
      REQUIRE(cudaMemset(a.p, backward ? 0x3C : 0x38, static_cast<size_t>(mp * kp)) == cudaSuccess);
      REQUIRE(cudaMemset(b.p, 0x38, static_cast<size_t>(kp * np)) == cudaSuccess);
      inv.write(std::vector<float>{0.5f, 0.25f});
      const float* s = static_cast<const float*>(inv.p);
      gemms.run(m, n, k, backward, a.p, b.p, c.p, s, s + 1, nullptr);
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      for (uint16_t v : c.read<uint16_t>(static_cast<size_t>(mp * np)))
        CHECK(bf16_to_float(v) == static_cast<float>(kp) * 0.125f); // Σ over padded k of 1·1, · 0.5 · 0.25
    }
  }
}
