#include "backend/detail/mpi_groups.hpp"

#include <algorithm>
#include <chrono>

#include "backend/error.hpp"
#include "schedules/op.hpp"

namespace twinscale::backend::detail {

using schedules::GroupKind;

namespace {

double wall_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

void check(int rc, const char* what) {
  if (rc != MPI_SUCCESS) throw BackendError(std::string("MPI call failed while creating communicators: ") + what);
}

} // namespace

MpiGroups::MpiGroups(const schedules::Layout& layout, int64_t rank, MPI_Comm world, GroupInit init,
                     bool expert_groups) {
  comms_.fill(MPI_COMM_NULL);
  double t = wall_s();
  MPI_Comm w = MPI_COMM_NULL;
  check(MPI_Comm_dup(world, &w), "MPI_Comm_dup(world)");
  MPI_Comm_set_errhandler(w, MPI_ERRORS_RETURN);
  comms_[static_cast<size_t>(GroupKind::World)] = w;
  phases_.push_back({"world", wall_s() - t});

  // M9 order: the intra-node TP group first, then DP, PP, Embedding.
  for (GroupKind kind : {GroupKind::Tp, GroupKind::Dp, GroupKind::Pp, GroupKind::Embedding, GroupKind::Ep,
                         GroupKind::ExpertDp, GroupKind::Cp, GroupKind::EpNode, GroupKind::EpRail}) {
    if (!expert_groups && (kind == GroupKind::Ep || kind == GroupKind::ExpertDp)) continue;
    if ((kind == GroupKind::EpNode || kind == GroupKind::EpRail) && (!expert_groups || !layout.hierarchical_ep()))
      continue;                                            // the hierarchical all-to-all's groups only when used
    if (kind == GroupKind::Cp && layout.cp == 1) continue; // context-parallel ring only when used
    t = wall_s();
    const std::vector<int64_t> members = layout.group_members(kind, rank);
    const bool member = std::find(members.begin(), members.end(), rank) != members.end();
    MPI_Comm c = MPI_COMM_NULL;
    if (init == GroupInit::Local) {
      if (member) {
        MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
        check(MPI_Comm_group(w, &world_group), "MPI_Comm_group");
        std::vector<int> ranks(members.begin(), members.end());
        check(MPI_Group_incl(world_group, static_cast<int>(ranks.size()), ranks.data(), &group), "MPI_Group_incl");
        check(MPI_Comm_create_group(w, group, 100 + static_cast<int>(kind), &c), "MPI_Comm_create_group");
        MPI_Group_free(&group);
        MPI_Group_free(&world_group);
      }
    } else {
      const int color = member ? static_cast<int>(members.front()) : MPI_UNDEFINED;
      const int key = member ? static_cast<int>(layout.group_rank(kind, rank)) : 0;
      check(MPI_Comm_split(w, color, key, &c), "MPI_Comm_split");
      check(MPI_Barrier(w), "MPI_Barrier(world) after a group");
    }
    if (c != MPI_COMM_NULL) MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    comms_[static_cast<size_t>(kind)] = c;
    phases_.push_back({std::string(schedules::to_string(kind)), wall_s() - t});
  }
}

MpiGroups::~MpiGroups() {
  if (leak_) return;
  for (MPI_Comm& c : comms_)
    if (c != MPI_COMM_NULL) MPI_Comm_free(&c);
}

} // namespace twinscale::backend::detail
