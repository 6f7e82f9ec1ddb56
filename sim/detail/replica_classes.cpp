// Every-rank runs in the analytic mode, executed once per class of identical replicas.
//
// A replica is a block of B consecutive data-parallel coordinates with all their tp and
// pp ranks (B = lcm(cp, ep): the context-parallel ring and the expert block inside one
// replica). Every group of the job is either inside one replica (TP, PP, embedding, CP,
// EP and its hierarchical phases) or shared by the corresponding ranks of every replica
// (DP, expert DP, world: the same group for rank (tp, k, pp) of each replica); both are
// checked on the layout, rank by rank, and anything else executes every rank. Two
// replicas whose corresponding ranks run the same program on the same GPU model at the
// same speed, and whose groups inside the replica cost the same, behave identically:
// a rank's timing depends on its compute, the costs of its own groups and when the
// shared groups' instances start, which is the last arrival of all their members and
// so the same for both. The costs compared are what the run computes: each distinct
// transfer's closed form (at its send), each distinct TP collective's closed form (at
// the group's first member), and the CTAs of every collective; a closed form that counts the group's symmetric images (the other
// kinds) is a max over the flows of the whole image set, which the corresponding groups
// of all replicas share (replicas are whole multiples of the images' dp step), so there
// the collective's plan is compared (phases, transfers, protocol: CollectivePlan's ==).
// A run executes one replica per class and gives every other rank its counterpart's
// account; the shared groups wait for the executed members only (their images arrive
// at the same instants). Floating point: every executed op sees the same operands in
// the same order, and the report sums the ranks' breakdowns in rank order as the full
// run does.
//
// Only where nothing else tells replicas apart: the analytic mode (in the flow mode each
// executed group's flows load the fabric, so leaving replicas out would change the
// contention), with the shortcuts on (`--no-aggregate` stays the full-detail reference),
// no fault plan but one of jitter pauses (each jittered GPU's replica a class of its own)
// and degraded links (in the costs compared; with time windows, what each cost is computed
// from), no folded expert layout. A hung rank (SimOptions::hang_rank) makes its replica a
// class of its own: the other replicas stop at the same instance of a shared group,
// waiting for it, as each does in the full run; hang_states() gives every rank its
// counterpart's positions under its own channels and peers. Traces hold every rank's events:
// the in-memory trace takes each rank's from its counterpart's timings, the binary trace
// indexes the counterpart's chunks for it (BinaryTraceWriter::same_events_as).
// SimOptions::replica_classes off, or TWINSCALE_PER_OP=1, executes every rank;
// tests/sim/replica_classes_test.cpp compares the two, every figure to the bit.
#include <algorithm>
#include <bit>
#include <map>
#include <numeric>

#include "faults/fault_plan.hpp"
#include "schedules/execution_rules.hpp"
#include "sim/detail/degradation_windows.hpp"
#include "sim/detail/executor.hpp"

namespace twinscale::sim::detail {

using schedules::GroupKind;

namespace {

// Marks in a replica's cheap signature, apart from any program, model or speed word:
// the hung rank's position (counting down from kHungMark), a jittered GPU (then its index).
constexpr uint64_t kHungMark = ~uint64_t{0};
constexpr uint64_t kJitteredMark = ~uint64_t{0} >> 1;

/// The group kinds whose group is the same for the corresponding ranks of every replica.
bool shared_kind(GroupKind k) { return k == GroupKind::Dp || k == GroupKind::ExpertDp || k == GroupKind::World; }

} // namespace

std::vector<int64_t> SimExecutor::every_rank_slots() {
  const auto& L = schedule_.layout;
  const int64_t world = L.world();
  std::vector<int64_t> all(static_cast<size_t>(world));
  std::iota(all.begin(), all.end(), int64_t{0});
  // A fault plan of the analytic mode's events: a jittered GPU's replica is a class of
  // its own (the pauses are drawn from the seed, the GPU and the iteration: plan_jitter());
  // a link degraded for the whole run is in every closed form the costs below compute;
  // with degradations in time windows a cost depends on when the op starts, so the costs
  // compare what it is computed from instead (DegradationWindows::flow_set).
  std::vector<uint8_t> jittered;
  const DegradationWindows* windows = paths_.windows();
  if (options_.faults != nullptr) {
    if (windows != nullptr && options_.calibration != nullptr) return all;
    for (const faults::PlanEvent& e : options_.faults->events) {
      if (e.kind == faults::PlanEventKind::LinkDegraded) continue; // in paths_ (degrade_link)
      if (e.kind != faults::PlanEventKind::Jitter) return all;
      if (jittered.empty()) jittered.assign(static_cast<size_t>(paths_.fabric().gpus()), 0);
      if (e.target_index >= 0 && e.target_index < static_cast<int64_t>(jittered.size()))
        jittered[static_cast<size_t>(e.target_index)] = 1;
    }
  }
  if (options_.mode != SimMode::Analytic || !options_.aggregate || L.folded_experts() || !options_.replica_classes ||
      per_op_forced())
    return all;
  const int64_t block = std::lcm(L.cp, L.ep);
  if (block <= 0 || L.dp % block != 0 || L.dp / block < 2) return all;
  const int64_t replicas = L.dp / block;
  const int64_t per_replica = L.tp * block * L.pp;
  // rank k (canonical order: pp, then the dp offset, then tp) of replica u
  auto rank_of = [&](int64_t u, int64_t k) {
    const int64_t tp = k % L.tp, off = (k / L.tp) % block, pp = k / (L.tp * block);
    return L.rank({tp, u * block + off, pp});
  };
  // every group a program uses lies inside one replica or is shared (checked, not assumed)
  std::vector<uint8_t> used(schedules::kGroupKindCount, 0);
  for (size_t p = 0; p < schedule_.programs.size(); ++p)
    for (const schedules::Channel& c : rules_.program(p).channels()) used[static_cast<size_t>(c.group)] = 1;
  for (int k = 0; k < schedules::kGroupKindCount; ++k) {
    const auto kind = static_cast<GroupKind>(k);
    if (used[static_cast<size_t>(k)] == 0) continue;
    if (shared_kind(kind)) { // every counterpart of a rank of replica 0 is in its group
      for (int64_t i = 0; i < per_replica; ++i) {
        const std::vector<int64_t> members = L.group_members(kind, rank_of(0, i));
        for (int64_t u = 1; u < replicas; ++u)
          if (std::find(members.begin(), members.end(), rank_of(u, i)) == members.end()) return all;
      }
      continue;
    }
    for (int64_t r = 0; r < world; ++r) // inside the rank's replica
      for (int64_t m : L.group_members(kind, r))
        if (L.coord(m).dp / block != L.coord(r).dp / block) return all;
  }

  // What costs nothing to compare first: program, GPU model and speed of each rank, and
  // whether it is the hung rank (SimOptions::hang_rank) or on a jittered GPU (named: no
  // other replica has that GPU): such a replica is a class of its own.
  auto cheap = [&](int64_t u) {
    std::vector<uint64_t> s;
    s.reserve(static_cast<size_t>(per_replica) * 2 + 1);
    for (int64_t k = 0; k < per_replica; ++k) {
      const int64_t r = rank_of(u, k);
      if (r == options_.hang_rank) s.push_back(kHungMark - static_cast<uint64_t>(k));
      const int64_t gpu = gpu_of_rank_[static_cast<size_t>(r)];
      if (!jittered.empty() && jittered[static_cast<size_t>(gpu)] != 0) {
        s.push_back(kJitteredMark);
        s.push_back(static_cast<uint64_t>(gpu));
      }
      const uint64_t model = model_of_gpu_.empty() ? 0 : model_of_gpu_[static_cast<size_t>(gpu)];
      s.push_back(static_cast<uint64_t>(schedule_.program_of_rank[static_cast<size_t>(r)]) << 8 | model);
      s.push_back(options_.gpu_speed.empty() ? 0
                                             : std::bit_cast<uint64_t>(options_.gpu_speed[static_cast<size_t>(gpu)]));
    }
    return s;
  };
  // The distinct communication ops of each program on the groups inside a replica
  // (kind, group, bytes, peer, stream, userbuffers SMs), by program.
  std::vector<std::vector<uint32_t>> distinct(schedule_.programs.size());
  for (size_t p = 0; p < schedule_.programs.size(); ++p) {
    const schedules::Program& prog = schedule_.programs[p];
    std::vector<uint32_t> ops;
    std::vector<std::array<uint64_t, 3>> seen;
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const schedules::Op& o = prog.ops[i];
      if (!o.is_communication() || shared_kind(o.group)) continue;
      const int64_t sms = tp_sms_.empty() ? -1 : tp_sms_[p][i];
      const std::array<uint64_t, 3> key{static_cast<uint64_t>(o.kind) | static_cast<uint64_t>(o.group) << 8 |
                                            static_cast<uint64_t>(o.stream) << 16 |
                                            static_cast<uint64_t>(static_cast<uint16_t>(sms)) << 24,
                                        std::bit_cast<uint64_t>(o.bytes), static_cast<uint64_t>(o.peer)};
      if (std::find(seen.begin(), seen.end(), key) != seen.end()) continue;
      seen.push_back(key);
      ops.push_back(i);
    }
    distinct[p] = std::move(ops);
  }
  // What the run would compute for each of them, rank by rank.
  std::vector<CollectivePlan> plans; // distinct plans, by index
  auto costs = [&](int64_t u) {
    std::vector<uint64_t> s;
    for (int64_t k = 0; k < per_replica; ++k) {
      const int64_t r = rank_of(u, k);
      const uint32_t pid = schedule_.program_of_rank[static_cast<size_t>(r)];
      const int64_t gpu = gpu_of_rank_[static_cast<size_t>(r)];
      const size_t model = model_of_gpu_.empty() ? 0 : model_of_gpu_[static_cast<size_t>(gpu)];
      Slot probe;
      probe.rank = r;
      probe.hot = hot_[pid * models_.size() + model].data();
      if (!tp_sms_.empty()) probe.tp_sms = tp_sms_[pid].data();
      for (uint32_t i : distinct[pid]) {
        const HotOp& h = probe.hot[i];
        // a transfer is costed at its send (its receive, in the same replica, matches it:
        // execution rule 3), a collective at its group's first member (every member runs
        // each instance with the same kind and bytes: rule 2)
        if (h.cls == HotOp::Recv) continue;
        if (h.cls == HotOp::Send) {
          const int64_t peer = schedules::group_member(L, h.group, r, schedule_.programs[pid].ops[i].peer);
          if (windows == nullptr) {
            s.push_back(std::bit_cast<uint64_t>(p2p_task(r, peer, h.value).closed_form_s));
          } else { // the transfer's flows in every epoch (p2p_task: DegradationWindows::p2p_s)
            const int64_t src = gpu_of_rank_[static_cast<size_t>(r)], dst = gpu_of_rank_[static_cast<size_t>(peer)];
            s.push_back(src == dst ? 0 : 1);
            if (src != dst)
              for (double v : windows->flow_set(p2p_plan(h.value, options_.channels), {{src, dst}}))
                s.push_back(std::bit_cast<uint64_t>(v));
          }
          continue;
        }
        GroupState group; // fresh: a scratch group caches nothing across groups
        s.push_back(static_cast<uint64_t>(collective_ctas(probe, i, group)));
        if (L.group_rank(h.group, r) != 0) continue;
        if (windows == nullptr && (h.group == GroupKind::Tp || options_.calibration != nullptr)) {
          s.push_back(std::bit_cast<uint64_t>(collective_task(h, r, group).closed_form_s));
          continue;
        }
        // A closed form that counts the group's symmetric images (every kind but TP's) is
        // a max over the flows of the whole image set, and the corresponding groups of all
        // replicas have the same image set (replicas are whole multiples of the images'
        // dp step): its cost is the same wherever the group's plan is, unless the group's
        // own flows cross a degraded link (those are slowed, not the images':
        // NetworkPaths::degrade_link). Such a group, and with windows a TP group, is
        // compared by what its own form reads as well.
        std::vector<int64_t> gpus;
        for (int64_t m : L.group_members(h.group, r)) gpus.push_back(gpu_of_rank_[static_cast<size_t>(m)]);
        CollectivePlan plan = gpus.size() <= 1 ? CollectivePlan{} : collectives_.plan(h.kind, h.value, gpus);
        const bool own_form = h.group == GroupKind::Tp || paths_.crosses_degraded(plan, gpus);
        auto it = std::find(plans.begin(), plans.end(), plan);
        s.push_back(static_cast<uint64_t>(it - plans.begin()));
        if (it == plans.end()) plans.push_back(plan);
        if (!own_form || plan.phases.empty()) continue;
        if (windows == nullptr) {
          s.push_back(std::bit_cast<uint64_t>(collective_task(h, r, group).closed_form_s));
          continue;
        }
        // with windows the seconds depend on the start: compare what collective_task's
        // closed form reads besides it, the flows of the image set in every epoch
        const auto gpu_groups = image_gpu_groups(L, gpu_of_rank_, h.group, L.group_members(h.group, r), shortcuts_);
        for (double v : windows->flow_set(plan, gpu_groups)) s.push_back(std::bit_cast<uint64_t>(v));
      }
    }
    return s;
  };

  struct Class {
    int64_t replica;
    std::vector<uint64_t> costs; // computed when first compared
  };
  std::map<std::vector<uint64_t>, std::vector<Class>> by_cheap; // the classes of each cheap signature
  std::vector<int64_t> class_of(static_cast<size_t>(replicas));
  std::vector<int64_t> reps;
  for (int64_t u = 0; u < replicas; ++u) {
    auto [same, fresh] = by_cheap.try_emplace(cheap(u));
    if (fresh) {
      same->second.push_back({u, {}});
      class_of[static_cast<size_t>(u)] = u;
      reps.push_back(u);
      continue;
    }
    const std::vector<uint64_t> mine = costs(u);
    int64_t found = -1;
    for (Class& cl : same->second) {
      if (cl.costs.empty()) cl.costs = costs(cl.replica);
      if (cl.costs == mine) {
        found = cl.replica;
        break;
      }
    }
    if (found < 0) {
      same->second.push_back({u, mine});
      reps.push_back(u);
      found = u;
    }
    class_of[static_cast<size_t>(u)] = found;
  }
  if (static_cast<int64_t>(reps.size()) == replicas) return all; // nothing alike: execute every rank

  replica_classes_ = static_cast<int64_t>(reps.size());
  std::vector<uint8_t> executed(static_cast<size_t>(replicas), 0);
  for (int64_t u : reps) executed[static_cast<size_t>(u)] = 1;
  std::vector<int64_t> out;
  out.reserve(static_cast<size_t>(replica_classes_ * per_replica));
  for (int64_t r = 0; r < world; ++r) // rank order, as the full run's slots
    if (executed[static_cast<size_t>(L.coord(r).dp / block)] != 0) out.push_back(r);
  // the rank each rank's counterpart is, in its class's executed replica
  stand_in_rank_.resize(static_cast<size_t>(world));
  for (int64_t r = 0; r < world; ++r) {
    const auto c = L.coord(r);
    const int64_t u = c.dp / block;
    stand_in_rank_[static_cast<size_t>(r)] =
        L.rank({c.tp, class_of[static_cast<size_t>(u)] * block + c.dp % block, c.pp});
  }
  return out;
}

} // namespace twinscale::sim::detail
