// The CUDA device: built when the toolkit exists; without a GPU the test is reported as
// skipped (ctest label `gpu`: `ctest -L gpu` runs it on a GPU machine). With one GPU it runs a 1-rank synthetic schedule end to end
// (cuBLAS, kernels, NCCL communicators of size 1, CUDA events) and checks the result.
#include <catch2/catch.hpp>

#include "backend/hang_report.hpp"
#include "backend/synthetic.hpp"
#include "backend/trace_check.hpp"
#include "mpi_helpers.hpp"
#include "tests/skip.hpp"
#include "backend/cuda/cuda_device.hpp"

using namespace twinscale;

TEST_CASE("cuda device: one rank runs the synthetic schedule on a GPU (skips without one)", "[gpu]") {
  if (backend::cuda_device_count() == 0)
    TWINSCALE_SKIP("no CUDA device visible (or built without the CUDA toolkit): the GPU run needs one");
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const std::string dir = backend::test::fresh_dir("cuda");
  const auto r = backend::test::shell(backend::test::mpirun(1) + " " TWINSCALE_CLI
                                      " run --synthetic 1x1x1 --synthetic-micro-batches 4 --synthetic-hidden 1024"
                                      " --device cuda --timeout 60 --run-dir " + dir + " --trace " + dir + "/trace.json",
                                      300);
  INFO(r.output);
  REQUIRE(r.status == 0);
  backend::SyntheticOptions so;
  so.micro_batches = 4;
  so.hidden = so.tokens = 1024;
  const auto s = backend::synthetic_schedule(schedules::Layout{1, 1, 1}, so);
  const auto report = backend::analyse_run_dir(dir, 1);
  REQUIRE(report.all_completed());
  const auto violations = backend::check_trace_semantics(s, report.states[0].events, 1e-5);
  for (const auto& v : violations) UNSCOPED_INFO(v);
  CHECK(violations.empty());
}
