// Rank layout of a 3D-parallel job in Megatron-LM's "tp-dp-pp" order: tensor-parallel
// rank varies fastest, then data-parallel, then pipeline
// (global rank = tp + TP·(dp + DP·pp), as in megatron/core/parallel_state.py).
// Context parallelism (Megatron's "tp-cp-ep-dp-pp") is folded into the data-parallel
// coordinate: with cp > 1, Layout::dp is dp·cp and a coordinate's dp = cp_rank + cp·dp_rank,
// so the Dp group is Megatron's dp-with-cp gradient group and a Cp group is a block of cp
// consecutive dp coordinates.
//
// Expert groups come in two layouts. Unfolded (etp = 0, the default): experts are sharded
// over blocks of ep consecutive dp coordinates at a fixed tp rank (ep divides dp), whole
// on every TP rank. Folded (etp >= 1, Megatron-Core's MoE parallel folding,
// arXiv 2504.14960): the MoE layers re-split the tp·dp ranks of a pipeline stage
// (dp here counting dp·cp) as etp × ep × edp, expert-TP fastest, then EP, then expert-DP
// ("tp-ep-dp-pp" of parallel_state.py's expert rank generator). With a stage-local rank
// l = tp + TP·dp: etp rank = l mod etp, ep rank = (l / etp) mod ep, edp rank = l / (etp·ep).
#pragma once

#include <cstdint>
#include <vector>

namespace twinscale::schedules {

/// Communicator kinds. Membership of a rank's group follows from the layout.
enum class GroupKind : uint8_t {
  Tp,        // same (dp, pp), all tp
  Dp,        // same (tp, pp), all dp
  Pp,        // same (tp, dp), all pp (p2p neighbours; peer = pp rank)
  Embedding, // same (tp, dp), pp ∈ {0, PP−1}: tied-embedding gradient all-reduce
  Ep,        // expert parallel: same (tp, pp), the ep consecutive dp ranks of a block;
             // folded: same (pp, etp rank, edp rank), ep ranks at stride etp in the stage
  Cp,        // context parallel: same (tp, pp), the cp consecutive dp coordinates of a block
  ExpertDp,  // holders of the same experts: same (pp, dp mod ep), all tp, dp/ep blocks (experts
             // are not split over TP: each TP rank routes its own tokens to whole experts);
             // folded: same (pp, etp rank, ep rank), the tp·dp/(etp·ep) expert-DP ranks
  EpNode,    // hierarchical all-to-all, phase 1: the ep_node consecutive EP ranks of one NVLink
             // domain (same tp, pp; a block of ep_node dp coordinates inside the EP block)
  EpRail,    // hierarchical all-to-all, phase 2: the EP ranks with the same index inside their
             // NVLink domain (one per domain: ep/ep_node of them, dp stride ep_node)
  World,
};
inline constexpr int kGroupKindCount = static_cast<int>(GroupKind::World) + 1;
/// The expert-parallel all-to-all groups (flat, or either phase of the hierarchical one).
inline bool is_expert_parallel(GroupKind g) {
  return g == GroupKind::Ep || g == GroupKind::EpNode || g == GroupKind::EpRail;
}

struct RankCoord {
  int64_t tp = 0;
  int64_t dp = 0;
  int64_t pp = 0;
};

struct Layout {
  int64_t tp = 1;
  int64_t dp = 1;
  int64_t pp = 1;
  int64_t ep = 1;      // expert-parallel size: divides dp (experts are sharded over a DP block)
  int64_t cp = 1;      // context-parallel size: divides dp (dp here counts dp·cp coordinates)
  int64_t ep_node = 1; // EP ranks per NVLink domain for the hierarchical all-to-all: divides ep
  int64_t etp = 0;     // expert tensor parallel size of the folded layout; 0 = unfolded

  /// The MoE layers use the folded expert layout (etp × ep × edp over a stage's tp·dp ranks).
  bool folded_experts() const { return etp > 0; }

  int64_t world() const { return tp * dp * pp; }
  /// The hierarchical all-to-all's two groups are in use (both larger than one rank).
  bool hierarchical_ep() const { return ep_node > 1 && ep_node < ep; }
  int64_t rank(RankCoord c) const { return c.tp + tp * (c.dp + dp * c.pp); }
  RankCoord coord(int64_t rank) const { return RankCoord{rank % tp, (rank / tp) % dp, rank / (tp * dp)}; }
  /// Members of `rank`'s group of `kind`, in group-rank order.
  std::vector<int64_t> group_members(GroupKind kind, int64_t rank) const;
  /// This rank's index inside its group of `kind`.
  int64_t group_rank(GroupKind kind, int64_t rank) const { return group_rank(kind, rank, coord(rank)); }
  /// The same with `rank`'s coordinates already taken (`c` == coord(rank)).
  int64_t group_rank(GroupKind kind, int64_t rank, const RankCoord& c) const;
  int64_t group_size(GroupKind kind) const;
  /// Member i of `rank`'s expert group of `kind` (Ep, ExpertDp, EpNode, EpRail) in the
  /// folded layout.
  int64_t folded_member(GroupKind kind, int64_t rank, int64_t i) const;
};

} // namespace twinscale::schedules
