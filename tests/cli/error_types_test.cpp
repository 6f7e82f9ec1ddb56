// The error policy (common/error.hpp): every typed error of every layer derives from
// twinscale::Error, so main reports it as bad input (exit 1) and never as an internal
// error (exit 3). A new error type belongs in this list.
#include <filesystem>
#include <string>
#include <type_traits>

#include <catch2/catch.hpp>

#include "backend/error.hpp"
#include "backend/work_queue_error.hpp"
#include "common/error.hpp"
#include "config/error.hpp"
#include "diagnose/error.hpp"
#include "faults/error.hpp"
#include "formats/chakra.hpp"
#include "records/error.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/interrupt.hpp"
#include "schedules/json_document.hpp"
#include "schedules/output_file.hpp"
#include "sim/error.hpp"
#include "study/error.hpp"
#include "tests/cli_runner.hpp"
#include "topology/fabric.hpp"

using namespace twinscale;

namespace {

template <class... E>
constexpr bool all_typed() {
  return (std::is_base_of_v<Error, E> && ...);
}

} // namespace

TEST_CASE("every layer's error type derives from twinscale::Error", "[cli][errors]") {
  static_assert(all_typed<schedules::JobError, schedules::ScheduleError, schedules::InputFileError,
                          topology::TopologyError, faults::FaultError, sim::SimError, config::ConfigError,
                          backend::BackendError, backend::WorkQueueError, backend::MpiJobError, formats::ChakraError,
                          study::StoreError, diagnose::DiagnoseError, schedules::InterruptedError,
                          schedules::JsonDocumentError, schedules::OutputFileError, records::RecordError>());
  // an MPI job's failure is a work-queue error: main ends every rank for it, then exits 1
  const backend::MpiJobError e("rank 1: computing an item: boom (the MPI job must end)");
  const Error& base = e;
  CHECK(std::string(base.what()) == "rank 1: computing an item: boom (the MPI job must end)");
}

TEST_CASE("an output directory that cannot be made is bad input naming its option, not an internal error",
          "[cli][errors]") {
  const std::filesystem::path dir = test::scratch_dir("output-dir-errors");
  const std::filesystem::path file = dir / "a-file";
  test::write_text(file, "not a directory\n");
  const std::string below_file = (file / "out").string();
  for (const std::string command : {"campaign", "tune-checkpoint"}) {
    const test::CliOutput r =
        test::run_cli_split(command + " --preset tiny-1f1b --seeds 2 --out " + below_file + " --quiet", dir);
    INFO(command << ": " << r.err);
    CHECK(r.code == 1);
    CHECK(r.says("--out " + below_file + ": cannot create the directory"));
  }
}

TEST_CASE("an output under /proc is bad input naming it, not an internal error", "[cli][errors]") {
  const std::filesystem::path dir = test::scratch_dir("proc-outputs");
  const std::string cases[][2] = {
      {"campaign --preset tiny-1f1b --seeds 2 --quiet --out /proc/twinscale-c", "--out /proc/twinscale-c"},
      {"tune-checkpoint --preset tiny-1f1b --seeds 2 --quiet --out /proc/self/t", "--out /proc/self/t"},
      {"simulate --preset tiny-1f1b --mode analytic --trace /proc/twinscale.json", "/proc/twinscale.json"},
      {"simulate --preset tiny-1f1b --mode analytic --every-rank --hang-rank 1 --run-dir /proc/twinscale-rd",
       "--run-dir /proc/twinscale-rd"},
      {"topology show tiny-2tier --dot /proc/twinscale.dot", "/proc/twinscale.dot"},
  };
  for (const auto& [args, named] : cases) {
    INFO(args);
    const test::CliOutput r = test::run_cli_split(args, dir);
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(r.says(named));
  }
}

TEST_CASE("collective: a group that does not fit the cluster's servers names --gpus and --gpus-per-server",
          "[cli][errors]") {
  const std::filesystem::path dir = test::scratch_dir("collective-group-error");
  const test::CliOutput r = test::run_cli_split("collective --cluster tiny-2tier --gpus 12 --gpus-per-server 8", dir);
  CHECK(r.code == 1);
  CHECK(r.says("--gpus/--gpus-per-server on cluster 'tiny-2tier': gpus = 12"));
}
