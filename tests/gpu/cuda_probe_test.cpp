// `probe --device cuda` and FP8 GEMMs on real GPUs (label gpu; SKIPPED where none, see
// gpu_main.cpp): a tiny probe on one GPU (every compute op measured under its own dtype,
// a GPU cluster description that loads) and on two (bf16 sweeps, nothing wrong); an FP8
// schedule on one GPU runs its cuBLASLt GEMMs, casts and scale updates, or — below
// compute capability 8.9 — is refused naming the GPU and the requirement.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <catch2/catch.hpp>
#include <cuda_runtime.h>

#include "../backend/mpi_helpers.hpp"
#include "backend/cuda/cuda_device.hpp"
#include "backend/error.hpp"
#include "backend/executor.hpp"
#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "gpu_helpers.hpp"
#include "schedules/calibration.hpp"
#include "schedules/schedule.hpp"
#include "tests/skip.hpp"

using namespace twinscale;
using schedules::Op;

namespace {

std::string tiny_job(int dp, bool fp8) {
  return "name = \"tiny-probe\"\ncluster = \"tiny-h100\"\n[model]\nlayers = 2\nhidden = 1024\nheads = 8\n"
         "seq_len = 512\nvocab = 8192\n[parallel]\ntp = 1\npp = 1\ndp = " +
         std::to_string(dp) + "\nmicro_batch = 1\nglobal_batch = " + std::to_string(2 * dp) +
         "\n[schedule]\npipeline = \"1f1b\"\niterations = 1\n" + (fp8 ? "[precision]\ngemm = \"fp8\"\n" : "");
}

int compute_capability() {
  int dev = 0;
  cudaDeviceProp p{};
  if (cudaGetDevice(&dev) != cudaSuccess || cudaGetDeviceProperties(&p, dev) != cudaSuccess) return 0;
  return p.major * 10 + p.minor;
}

/// `twinscale probe --device cuda` of tiny_job(dp) on dp GPUs; checks the table covers
/// every compute op at its own dtype and the cluster description loads.
void probe_on(int dp, bool fp8) {
  const std::string dir = backend::test::fresh_dir("gpu-probe");
  std::ofstream(dir + "/job.toml") << tiny_job(dp, fp8);
  const std::string launch = dp > 1 ? backend::test::mpirun(dp) + " " : std::string();
  const auto r = backend::test::shell(launch + TWINSCALE_CLI " probe " + dir +
                                          "/job.toml --device cuda --warmup 1 --repetitions 3 "
                                          "--max-sweep-bytes 4194304 --out " +
                                          dir + "/cal.json --cluster-out " + dir + "/host.toml",
                                      300);
  INFO(r.output);
  REQUIRE(r.status == 0);
  std::puts(r.output.c_str());
  const schedules::CalibrationTable t = schedules::read_calibration_file(dir + "/cal.json");
  CHECK(t.source == "cuda");
  CHECK(t.device.rfind("cuda:", 0) == 0);
  const schedules::Schedule s = schedules::lower(config::load_job(dir + "/job.toml"),
                                                 schedules::LoweringTarget{80e9, /*check_memory=*/false, {}, true});
  for (const Op& op : s.program(0).ops) {
    if (op.is_communication()) continue;
    INFO(s.names[op.name]);
    const auto* k = t.find_kernel(op.kernel, op.dtype, op.shape, s.names[op.name]);
    REQUIRE(k != nullptr);
    CHECK(k->seconds > 0);
  }
  if (dp > 1) {
    CHECK(r.output.find("bfloat16") != std::string::npos);
    CHECK_FALSE(t.comms.empty());
    // the #wrong column (the last) of every sweep row: 0
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) {
      if (line.find(" bfloat16 ") == std::string::npos) continue;
      std::istringstream words(line);
      std::string last;
      for (std::string w; words >> w;) last = w;
      CHECK(last == "0");
    }
  }
  const topology::ClusterSpec c = config::load_cluster(dir + "/host.toml");
  CHECK(c.gpus == dp);
  CHECK(c.gpu.nvlink_bw_bytes_per_s > 0);
  std::filesystem::remove_all(dir);
}

} // namespace

TEST_CASE("cuda probe: a tiny job on one GPU, every compute op measured by CUDA events") { probe_on(1, false); }

TEST_CASE("cuda probe: two GPUs, bf16 NCCL sweeps checked element by element") {
  if (const auto why = backend::test::missing_for("two-GPU probing", 2, true); !why.empty()) TWINSCALE_SKIP(why);
  probe_on(2, false);
}

TEST_CASE("cuda probe: an FP8 job measures its FP8 GEMMs and casts (compute capability 8.9 or newer)") {
  if (compute_capability() < 89) TWINSCALE_SKIP("FP8 needs compute capability 8.9");
  probe_on(1, true);
}

TEST_CASE("cuda device: FP8 GEMMs, casts and scale updates run on cuBLASLt, or are refused below 8.9") {
  const std::string dir = backend::test::fresh_dir("gpu-fp8");
  std::ofstream(dir + "/job.toml") << tiny_job(1, true);
  const schedules::Schedule s = schedules::lower(config::load_job(dir + "/job.toml"),
                                                 schedules::LoweringTarget{80e9, /*check_memory=*/false, {}, true});
  std::filesystem::remove_all(dir);
  size_t fp8_gemms = 0, casts = 0;
  for (const Op& op : s.program(0).ops) {
    fp8_gemms += op.kind == schedules::OpKind::Gemm && op.dtype == schedules::DType::FP8;
    casts += op.kernel == schedules::Kernel::Fp8Cast;
  }
  REQUIRE(fp8_gemms > 0);
  REQUIRE(casts > 0);
  std::vector<backend::InitPhase> phases;
  const backend::BroadcastFromRoot alone = [](void*, size_t, const std::string&) {};
  auto dev = backend::make_cuda_device(s, 0, alone, 0, 60, phases);
  backend::ExecutorOptions o;
  o.timeout_s = 60;
  if (compute_capability() < 89) {
    try {
      const backend::RankResult r = backend::Executor(s, 0, *dev, o).run();
      CHECK(r.status != backend::RunStatus::Completed);
    } catch (const backend::BackendError& e) {
      CHECK_THAT(e.what(), Catch::Contains("8.9") && Catch::Contains("fp8"));
    }
    return;
  }
  const backend::RankResult r = backend::Executor(s, 0, *dev, o).run();
  REQUIRE(r.status == backend::RunStatus::Completed);
  for (const auto& ev : r.events) {
    const Op& op = s.program(0).ops[ev.op_index];
    INFO(s.names[op.name]);
    CHECK(!ev.failed);
    if (op.kind == schedules::OpKind::Gemm) CHECK(ev.end_s > ev.start_s);
  }
}
