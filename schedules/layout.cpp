#include "schedules/layout.hpp"

#include "schedules/error.hpp"

namespace twinscale::schedules {

int64_t Layout::group_size(GroupKind kind) const {
  switch (kind) {
  case GroupKind::Tp: return tp;
  case GroupKind::Dp: return dp;
  case GroupKind::Pp: return pp;
  case GroupKind::Embedding: return pp > 1 ? 2 : 1;
  case GroupKind::Ep: return ep;
  case GroupKind::Cp: return cp;
  case GroupKind::ExpertDp: return tp * (dp / ep);
  case GroupKind::EpNode: return ep_node;
  case GroupKind::EpRail: return ep / ep_node;
  case GroupKind::World: return world();
  }
  TWINSCALE_ASSERT(false, "unknown GroupKind");
}

int64_t Layout::group_rank(GroupKind kind, int64_t rank) const {
  const RankCoord c = coord(rank);
  switch (kind) {
  case GroupKind::Tp: return c.tp;
  case GroupKind::Dp: return c.dp;
  case GroupKind::Pp: return c.pp;
  case GroupKind::Embedding: return c.pp == 0 ? 0 : 1;
  case GroupKind::Ep: return c.dp % ep;
  case GroupKind::Cp: return c.dp % cp;
  case GroupKind::ExpertDp: return c.tp + tp * (c.dp / ep);
  case GroupKind::EpNode: return c.dp % ep_node;
  case GroupKind::EpRail: return c.dp % ep / ep_node;
  case GroupKind::World: return rank;
  }
  TWINSCALE_ASSERT(false, "unknown GroupKind");
}

std::vector<int64_t> Layout::group_members(GroupKind kind, int64_t rank) const {
  const RankCoord c = coord(rank);
  std::vector<int64_t> out;
  switch (kind) {
  case GroupKind::Tp:
    for (int64_t i = 0; i < tp; ++i) out.push_back(this->rank({i, c.dp, c.pp}));
    break;
  case GroupKind::Dp:
    for (int64_t i = 0; i < dp; ++i) out.push_back(this->rank({c.tp, i, c.pp}));
    break;
  case GroupKind::Pp:
    for (int64_t i = 0; i < pp; ++i) out.push_back(this->rank({c.tp, c.dp, i}));
    break;
  case GroupKind::Embedding:
    out.push_back(this->rank({c.tp, c.dp, 0}));
    if (pp > 1) out.push_back(this->rank({c.tp, c.dp, pp - 1}));
    break;
  case GroupKind::Ep:
    for (int64_t i = 0; i < ep; ++i) out.push_back(this->rank({c.tp, c.dp / ep * ep + i, c.pp}));
    break;
  case GroupKind::Cp:
    for (int64_t i = 0; i < cp; ++i) out.push_back(this->rank({c.tp, c.dp / cp * cp + i, c.pp}));
    break;
  case GroupKind::ExpertDp:
    for (int64_t j = 0; j < dp / ep; ++j)
      for (int64_t i = 0; i < tp; ++i) out.push_back(this->rank({i, c.dp % ep + j * ep, c.pp}));
    break;
  case GroupKind::EpNode:
    for (int64_t i = 0; i < ep_node; ++i) out.push_back(this->rank({c.tp, c.dp / ep_node * ep_node + i, c.pp}));
    break;
  case GroupKind::EpRail:
    for (int64_t j = 0; j < ep / ep_node; ++j)
      out.push_back(this->rank({c.tp, c.dp / ep * ep + c.dp % ep_node + j * ep_node, c.pp}));
    break;
  case GroupKind::World:
    for (int64_t i = 0; i < world(); ++i) out.push_back(i);
    break;
  }
  return out;
}

} // namespace twinscale::schedules
