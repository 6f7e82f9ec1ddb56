// Communicators of one rank, created in M9's order: the world once, then this rank's
// TP, DP, PP and Embedding groups. GroupInit::Local uses MPI_Comm_create_group, which
// involves only the group's members (no global barrier per group); GlobalSplit is the
// baseline: MPI_Comm_split over the world plus a world barrier after each group.
#pragma once

#include <array>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "backend/rendezvous.hpp"
#include "schedules/layout.hpp"

namespace twinscale::backend::detail {

class MpiGroups {
public:
  /// `expert_groups`: also the ep and edp communicators (jobs with experts only).
  MpiGroups(const schedules::Layout& layout, int64_t rank, MPI_Comm world, GroupInit init, bool expert_groups = false);
  ~MpiGroups();
  MpiGroups(const MpiGroups&) = delete;
  MpiGroups& operator=(const MpiGroups&) = delete;

  MPI_Comm comm(schedules::GroupKind kind) const { return comms_[static_cast<size_t>(kind)]; }
  /// Seconds per initialisation phase, in order ("world", "tp", "dp", "pp", "embedding").
  const std::vector<InitPhase>& phases() const { return phases_; }
  /// After a timeout: communicators may have requests towards dead peers; leave them.
  void leak() { leak_ = true; }

private:
  std::array<MPI_Comm, schedules::kGroupKindCount> comms_;
  std::vector<InitPhase> phases_;
  bool leak_ = false;
};

} // namespace twinscale::backend::detail
