// Start-up: the CUDA runtime, cuBLAS and NCCL are loaded only by the commands that run on
// GPUs (backend/cuda/plugin.hpp), SimGrid only by the flow mode (sim/detail/flow_plugin.hpp).
// The dynamic loader's own account (LD_DEBUG=files: every shared library it maps, at
// start or by dlopen) of --help and an analytic simulation names none of them; that of a
// flow-mode simulation names the flow plugin and SimGrid.
#include <catch2/catch.hpp>

#include <cstdio>
#include <string>

#include "tests/cli_runner.hpp"

namespace {

/// What the dynamic loader reports mapping while `twinscale ARGS` runs (its stderr).
std::string libraries_loaded_by(const std::string& args) {
  const std::string cmd = "LD_DEBUG=files " + std::string(TWINSCALE_CLI) + " " + args + " 2>&1 >/dev/null";
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n = 0;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

} // namespace

TEST_CASE("startup: --help and an analytic simulation map no CUDA, cuBLAS, NCCL or SimGrid library", "[cli]") {
  for (const std::string args : {"--help", "simulate --preset tiny-megascale --mode analytic"}) {
    INFO("twinscale " << args);
    const std::string loaded = libraries_loaded_by(args);
    REQUIRE_THAT(loaded, Catch::Contains("file=libc.so.6")); // the loader's report is there to read
    CHECK_THAT(loaded, !Catch::Contains("libcudart") && !Catch::Contains("libcublas") && !Catch::Contains("libnccl") &&
                           !Catch::Contains("libtwinscale_cuda") && !Catch::Contains("libsimgrid") &&
                           !Catch::Contains("libtwinscale_flow"));
  }
}

TEST_CASE("startup: a flow-mode simulation opens the flow plugin and SimGrid", "[cli]") {
  const std::string loaded = libraries_loaded_by("simulate --preset tiny-megascale --mode flow");
  CHECK_THAT(loaded, Catch::Contains("libtwinscale_flow.so") && Catch::Contains("libsimgrid"));
  CHECK_THAT(loaded, !Catch::Contains("libcudart"));
}
