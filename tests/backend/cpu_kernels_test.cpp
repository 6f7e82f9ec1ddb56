// CPU kernels (Eigen) on real buffers, shape scaling, launch environment and
// rendezvous parsing.
#include <cmath>
#include <cstdlib>
#include <thread>
#include <vector>

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <catch2/catch.hpp>

#include "backend/detail/cache_flush.hpp"
#include "backend/detail/cpu_kernels.hpp"
#include "backend/error.hpp"
#include "backend/rendezvous.hpp"

using namespace twinscale;

TEST_CASE("cpu kernels: scaled shapes round up and keep zeros") {
  schedules::Op op;
  op.kind = schedules::OpKind::Gemm;
  op.shape = {1000, 7, 64, 0};
  CHECK(backend::detail::scaled_shape(op, 1) == std::array<int64_t, 4>{1000, 7, 64, 0});
  CHECK(backend::detail::scaled_shape(op, 8) == std::array<int64_t, 4>{125, 1, 8, 0});
  op.kind = schedules::OpKind::AllReduce;
  op.bytes = 1024;
  CHECK(backend::detail::scaled_bytes(op, 4) == 256);
  op.bytes = 2;
  CHECK(backend::detail::scaled_bytes(op, 4) == 4);
}

TEST_CASE("cpu kernels: every compute kernel runs on real buffers and gives finite output") {
  backend::detail::CpuKernels k(64e6);
  using schedules::Kernel;
  using schedules::OpKind;
  struct Case {
    OpKind kind;
    Kernel kernel;
    std::array<int64_t, 4> shape;
  };
  for (const Case& c : {Case{OpKind::Gemm, Kernel::Gemm, {32, 16, 8, 0}},
                        Case{OpKind::Attention, Kernel::AttentionUnfused, {2, 16, 8, 0}},
                        Case{OpKind::Attention, Kernel::FlashAttention2, {2, 16, 8, 4}},
                        Case{OpKind::Elementwise, Kernel::LayerNorm, {3000, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::FusedLayerNorm, {3000, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::Gelu, {100, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::FusedBiasGelu, {100, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::Dropout, {100, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::CrossEntropy, {2048, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::ResidualAdd, {100, 0, 0, 0}},
                        Case{OpKind::Elementwise, Kernel::Fp8Cast, {100, 0, 0, 0}},
                        Case{OpKind::OptimizerStep, Kernel::AdamStep, {500, 0, 0, 0}},
                        Case{OpKind::OptimizerStep, Kernel::LambStep, {500, 0, 0, 0}}}) {
    schedules::Op op;
    op.kind = c.kind;
    op.kernel = c.kernel;
    INFO(schedules::to_string(c.kernel));
    CHECK(std::isfinite(k.run(op, c.shape)));
  }
}

TEST_CASE("cpu kernels: a GEMM computes the product") {
  backend::detail::CpuKernels k(64e6);
  schedules::Op op;
  op.kind = schedules::OpKind::Gemm;
  // C(0,0) = Σ_k A(0,k)·B(k,0) with the kernels' deterministic fill; compare with a
  // second run at the same shape (same buffers, same result) and a 1×1×1 product.
  const double a = k.run(op, {4, 4, 4, 0});
  CHECK(a == k.run(op, {4, 4, 4, 0}));
  backend::detail::CpuKernels k1(64e6);
  const float x = 0.001f * static_cast<float>((0 * 2654435761u + 0) % 1000) - 0.5f;
  const float y = 0.001f * static_cast<float>((0 * 2654435761u + 1) % 1000) - 0.5f;
  CHECK(k1.run(op, {1, 1, 1, 0}) == Approx(static_cast<double>(x * y)));
}

TEST_CASE("cpu kernels: denormals are flushed on the kernel's thread (speed independent of values)") {
#if defined(__SSE__)
  std::thread t([] {
    _mm_setcsr(_mm_getcsr() & ~0x8040u); // IEEE denormals on this thread
    volatile float tiny = 1e-30f;
    CHECK(tiny * 1e-10f != 0.0f); // a denormal
    backend::detail::CpuKernels k(64e6);
    schedules::Op op;
    op.kind = schedules::OpKind::Gemm;
    k.run(op, {4, 4, 4, 0});
    CHECK((_mm_getcsr() & 0x8040u) == 0x8040u); // FTZ and DAZ
    CHECK(tiny * 1e-10f == 0.0f);               // flushed
  });
  t.join();
#else
  SUCCEED("no SSE control register on this architecture");
#endif
}

TEST_CASE("cpu kernels: the FP8 cast scales by the amax to E4M3's range and rounds to 3 mantissa bits") {
  backend::detail::CpuKernels k(64e6);
  schedules::Op op;
  op.kind = schedules::OpKind::Elementwise;
  op.kernel = schedules::Kernel::Fp8Cast;
  // the deterministic fill puts x[0] = -0.5, the largest magnitude of the first 1,000
  // elements: it is scaled to -448 (E4M3's largest finite value), exactly representable
  CHECK(k.run(op, {1000, 0, 0, 0}) == -448.0);
  backend::detail::CpuKernels k2(64e6);
  const double small = k2.run(op, {1, 0, 0, 0}); // one element: scaled to ±448
  CHECK(std::fabs(small) == 448.0);
}

TEST_CASE("cpu kernels: a buffer above the limit asks for a shape divisor") {
  backend::detail::CpuKernels k(1e6);
  schedules::Op op;
  op.kind = schedules::OpKind::Gemm;
  CHECK_THROWS_WITH(k.run(op, {1000, 1000, 1000, 0}), Catch::Contains("--shape-divisor"));
}

TEST_CASE("rendezvous: parse mpi and redis://HOST:PORT, reject the rest") {
  CHECK(backend::parse_rendezvous("mpi").kind == backend::RendezvousSpec::Kind::Mpi);
  const auto r = backend::parse_rendezvous("redis://10.0.0.1:7000");
  CHECK(r.kind == backend::RendezvousSpec::Kind::Redis);
  CHECK(r.host == "10.0.0.1");
  CHECK(r.port == 7000);
  CHECK(backend::parse_rendezvous("redis://h").port == 6379);
  CHECK_THROWS_WITH(backend::parse_rendezvous("redis://h:99999"), Catch::Contains("1..65535"));
  CHECK_THROWS_WITH(backend::parse_rendezvous("tcp://x"), Catch::Contains("mpi and redis://HOST:PORT"));
}

TEST_CASE("launch env: OpenMPI, Slurm and PMI variables, with checks") {
  for (const char* v :
       {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "PMI_RANK", "PMI_SIZE"})
    ::unsetenv(v);
  CHECK(backend::detect_launch_env().launcher == "none");
  ::setenv("SLURM_PROCID", "3", 1);
  ::setenv("SLURM_NTASKS", "8", 1);
  auto e = backend::detect_launch_env();
  CHECK(e.launcher == "slurm");
  CHECK(e.rank == 3);
  CHECK(e.size == 8);
  ::setenv("SLURM_PROCID", "9", 1);
  CHECK_THROWS_WITH(backend::detect_launch_env(), Catch::Contains("SLURM_PROCID=9"));
  ::setenv("SLURM_PROCID", "x", 1);
  CHECK_THROWS_WITH(backend::detect_launch_env(), Catch::Contains("not a non-negative integer"));
  ::unsetenv("SLURM_PROCID");
  CHECK_THROWS_WITH(backend::detect_launch_env(), Catch::Contains("must both be set"));
  ::unsetenv("SLURM_NTASKS");
}

TEST_CASE("cache flush: a flushed range keeps its contents, at any alignment and length") {
  std::vector<float> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i) * 0.5f;
  backend::detail::flush_from_caches(v.data(), v.size() * sizeof(float));
  backend::detail::flush_from_caches(reinterpret_cast<const char*>(v.data()) + 3, 1);    // one byte, unaligned
  backend::detail::flush_from_caches(reinterpret_cast<const char*>(v.data()) + 61, 200); // across lines
  backend::detail::flush_from_caches(nullptr, 64);                                       // nothing
  backend::detail::flush_from_caches(v.data(), 0);
  bool same = true;
  for (size_t i = 0; i < v.size(); ++i) same = same && v[i] == static_cast<float>(i) * 0.5f;
  CHECK(same);
#if defined(__x86_64__) || defined(__aarch64__)
  CHECK(backend::detail::cache_flush_supported());
#endif
}
