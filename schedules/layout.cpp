#include "schedules/layout.hpp"

#include "schedules/error.hpp"

namespace twinscale::schedules {

namespace {

/// Expert groups of the folded layout (layout.hpp): a stage's ranks as etp × ep × edp.
struct Folded {
  int64_t base;  // first rank of the pipeline stage
  int64_t local; // rank inside the stage
  int64_t etp, ep, edp;
  int64_t ep_node;

  Folded(const Layout& L, int64_t rank)
      : base(rank / (L.tp * L.dp) * (L.tp * L.dp)), local(rank % (L.tp * L.dp)), etp(L.etp), ep(L.ep),
        edp(L.tp * L.dp / (L.etp * L.ep)), ep_node(L.ep_node) {}
  int64_t t() const { return local % etp; }
  int64_t e() const { return local / etp % ep; }
  int64_t d() const { return local / (etp * ep); }
  int64_t at(int64_t t_, int64_t e_, int64_t d_) const { return base + t_ + etp * (e_ + ep * d_); }

  int64_t size(GroupKind kind) const {
    if (kind == GroupKind::Ep) return ep;
    if (kind == GroupKind::ExpertDp) return edp;
    if (kind == GroupKind::EpNode) return ep_node;
    return ep / ep_node; // EpRail
  }
  int64_t index(GroupKind kind) const {
    if (kind == GroupKind::Ep) return e();
    if (kind == GroupKind::ExpertDp) return d();
    if (kind == GroupKind::EpNode) return e() % ep_node;
    return e() / ep_node; // EpRail
  }
  /// Member i of this rank's group of `kind`.
  int64_t member(GroupKind kind, int64_t i) const {
    if (kind == GroupKind::Ep) return at(t(), i, d());
    if (kind == GroupKind::ExpertDp) return at(t(), e(), i);
    if (kind == GroupKind::EpNode) return at(t(), e() / ep_node * ep_node + i, d());
    return at(t(), e() % ep_node + i * ep_node, d()); // EpRail
  }
};

bool expert_kind(GroupKind kind) { return is_expert_parallel(kind) || kind == GroupKind::ExpertDp; }

} // namespace

int64_t Layout::folded_member(GroupKind kind, int64_t rank, int64_t i) const {
  return Folded(*this, rank).member(kind, i);
}

int64_t Layout::group_size(GroupKind kind) const {
  if (folded_experts() && expert_kind(kind)) return Folded(*this, 0).size(kind);
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

int64_t Layout::group_rank(GroupKind kind, int64_t rank, const RankCoord& c) const {
  if (folded_experts() && expert_kind(kind)) return Folded(*this, rank).index(kind);
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
  if (folded_experts() && expert_kind(kind)) {
    const Folded f(*this, rank);
    for (int64_t i = 0; i < f.size(kind); ++i) out.push_back(f.member(kind, i));
    return out;
  }
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
