// The error policy (common/error.hpp): every typed error of every layer derives from
// twinscale::Error, so main reports it as bad input (exit 1) and never as an internal
// error (exit 3). A new error type belongs in this list.
#include <type_traits>

#include <catch2/catch.hpp>

#include "backend/error.hpp"
#include "backend/work_queue_error.hpp"
#include "common/error.hpp"
#include "config/error.hpp"
#include "diagnose/error.hpp"
#include "faults/error.hpp"
#include "formats/chakra.hpp"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "sim/error.hpp"
#include "study/error.hpp"
#include "topology/fabric.hpp"

using namespace twinscale;

namespace {

template <class... E>
constexpr bool all_typed() {
  return (std::is_base_of_v<Error, E> && ...);
}

} // namespace

TEST_CASE("every layer's error type derives from twinscale::Error", "[cli][errors]") {
  static_assert(
      all_typed<schedules::JobError, schedules::ScheduleError, schedules::InputFileError, topology::TopologyError,
                faults::FaultError, sim::SimError, config::ConfigError, backend::BackendError, backend::WorkQueueError,
                backend::MpiJobError, formats::ChakraError, study::StoreError, diagnose::DiagnoseError>());
  // an MPI job's failure is a work-queue error: main ends every rank for it, then exits 1
  const backend::MpiJobError e("rank 1: computing an item: boom (the MPI job must end)");
  const Error& base = e;
  CHECK(std::string(base.what()) == "rank 1: computing an item: boom (the MPI job must end)");
}
