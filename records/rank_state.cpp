#include "records/rank_state.hpp"

#include "schedules/error.hpp"

namespace twinscale::records {

std::string_view to_string(RunStatus s) {
  switch (s) {
  case RunStatus::Completed: return "completed";
  case RunStatus::TimedOut: return "timed_out";
  case RunStatus::OpFailed: return "op_failed";
  case RunStatus::Aborted: return "aborted";
  }
  TWINSCALE_ASSERT(false, "unknown RunStatus");
}

} // namespace twinscale::records
