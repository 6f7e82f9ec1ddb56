// The simulator's executor, set up: each program's hot records (device times,
// priorities, dependency positions), the slots of the executed ranks, their groups, and
// whether one pipeline stands for every data-parallel replica (symmetry). The run itself
// (issue, complete, communication) is in executor.cpp.
#include "sim/detail/executor.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdio>

#include "common/helper_thread.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/limits.hpp"
#include "sim/error.hpp"

namespace twinscale::sim::detail {

using schedules::GroupKind;
using schedules::Op;
using schedules::OpKind;
using schedules::ScheduleError;

namespace {

/// The distinct values of `priorities` (each op's Op::priority), sorted: programs use a
/// few, in runs, so each new one is inserted in place (no sort of every op's); past 64 the
/// plain sort of all of them. Only their order matters: an op's rank among them is its
/// HotOp::priority.
std::vector<int32_t> distinct_priorities(const std::vector<int32_t>& priorities, size_t program_id) {
  std::vector<int32_t> distinct;
  for (size_t i = 0; i < priorities.size(); ++i) {
    const int32_t v = priorities[i];
    if (i > 0 && v == priorities[i - 1]) continue; // a run of one priority: already seen
    auto it = std::lower_bound(distinct.begin(), distinct.end(), v);
    if (it != distinct.end() && *it == v) continue;
    if (distinct.size() == 64) {
      distinct = priorities;
      std::sort(distinct.begin(), distinct.end());
      distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
      break;
    }
    distinct.insert(it, v);
  }
  if (distinct.size() > UINT16_MAX + size_t{1})
    throw ScheduleError("program " + std::to_string(program_id) + ": " + std::to_string(distinct.size()) +
                        " distinct op priorities (at most 65536)");
  return distinct;
}

/// The SMs Transformer Engine's userbuffers take, by op name: the OverlapSpec::tp_sms_*
/// of each role (kTeUbRoles) at its TP-overlap collective's name, −1 (the channels asked
/// for) elsewhere; empty when the job states none (or has no TP overlap).
std::vector<int16_t> te_ub_sms_by_name(const std::vector<std::string>& names, const schedules::OverlapSpec& overlap) {
  std::vector<int16_t> by_name;
  if (!overlap.tp) return by_name;
  for (const schedules::TeUbRole& role : schedules::kTeUbRoles) {
    const int64_t sms = overlap.*role.sms;
    if (sms < 0) continue;
    if (by_name.empty()) by_name.assign(names.size(), -1);
    for (size_t n = 0; n < names.size(); ++n)
      if (names[n] == role.op_name) by_name[n] = static_cast<int16_t>(sms);
  }
  return by_name;
}

/// Those SMs for each op of `program` (TP-stream ops only; −1 for every other op).
std::vector<int16_t> te_ub_sms(const schedules::Program& program, const std::vector<int16_t>& by_name) {
  std::vector<int16_t> out(program.ops.size(), -1);
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const schedules::Op& op = program.ops[i];
    if (op.stream == schedules::Stream::TpComm && op.name < by_name.size()) out[i] = by_name[op.name];
  }
  return out;
}

/// The host's issue time of each op of `program` (the job's host time per call): a
/// module call is a GEMM's forward or data-gradient pass (Transformer Engine and PyTorch
/// run the weight gradient inside the same backward call; the chunks of an overlapped GEMM
/// are one call) or an attention core's pass (each context-parallel ring step is one); the
/// host reaches op i once the calls before and at it are issued.
std::vector<double> host_issue_times(const schedules::Program& program, const std::vector<std::string>& names,
                                     double seconds_per_call) {
  std::vector<double> out(program.ops.size());
  double calls = 0;
  for (size_t i = 0; i < program.ops.size(); ++i) {
    const schedules::Op& op = program.ops[i];
    const std::string_view name = op.name < names.size() ? std::string_view(names[op.name]) : std::string_view();
    if (op.kernel == schedules::Kernel::Gemm && !name.ends_with(".wgrad"))
      calls += op.shape[3] > 1 ? 1.0 / static_cast<double>(op.shape[3]) : 1.0;
    else if (op.kind == schedules::OpKind::Attention)
      calls += 1;
    out[i] = calls * seconds_per_call;
  }
  return out;
}

/// Device times of compute ops. A program repeats a few shapes (every layer and
/// micro-batch runs the same ones), so without a calibration table (whose entries are by
/// op name) a direct-mapped memo keyed by every field the device model reads — kernel,
/// datatype, phase, shape, and the bit patterns of FLOPs and bytes — answers most ops
/// with the value the model gave for an identical one.
class DeviceTimes {
public:
  explicit DeviceTimes(const DeviceModel& device) : device_(device) {}

  double seconds(const Op& op) {
    if (device_.calibrated()) return device_.seconds(op);
    const Key key{{static_cast<uint64_t>(op.kernel) | static_cast<uint64_t>(op.dtype) << 8 |
                       static_cast<uint64_t>(op.labels.phase) << 16,
                   static_cast<uint64_t>(op.shape[0]), static_cast<uint64_t>(op.shape[1]),
                   static_cast<uint64_t>(op.shape[2]), static_cast<uint64_t>(op.shape[3]),
                   std::bit_cast<uint64_t>(op.flops), std::bit_cast<uint64_t>(op.bytes)}};
    uint64_t h = 0;
    for (uint64_t w : key) h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
    Slot& slot = slots_[(h >> 32) % kSlots];
    if (slot.used && slot.key == key) return slot.seconds;
    slot = Slot{key, device_.seconds(op), true};
    return slot.seconds;
  }

private:
  using Key = std::array<uint64_t, 7>;
  struct Slot {
    Key key{};
    double seconds = 0;
    bool used = false;
  };
  static constexpr size_t kSlots = 512;
  const DeviceModel& device_;
  std::vector<Slot> slots_ = std::vector<Slot>(kSlots);
};

/// The hot records of a program: what its rules index says of each op (position on its
/// stream, channel number), its dependencies and its device time.
/// One pass over the program's ops (each several cache lines), then one over compact
/// arrays for the priorities' ranks; errors in the order of the checks: the priorities,
/// then the first op with too many dependencies.
std::vector<HotOp> hot_ops(const schedules::ProgramIndex& ix, size_t program_id, const DeviceModel& device) {
  const schedules::Program& p = ix.program();
  std::vector<HotOp> hot(p.ops.size());
  std::vector<int32_t> priority(p.ops.size());
  DeviceTimes times(device);
  int64_t too_many_deps = -1; // the first op with more than 65,535 dependencies
  for (uint32_t i = 0; i < p.ops.size(); ++i) {
    const Op& op = p.ops[i];
    HotOp& h = hot[i];
    h.pos_in_stream = ix.position(i);
    if (op.dep_count > UINT16_MAX && too_many_deps < 0) too_many_deps = i;
    h.dep_begin = op.dep_begin;
    h.dep_count = static_cast<uint16_t>(op.dep_count);
    h.stream = static_cast<uint8_t>(op.stream);
    priority[i] = op.priority;
    h.group = op.group;
    h.kind = op.kind;
    if (op.is_communication()) {
      h.sequence = ix.sequence(i);
      h.channel_key = ix.channels()[ix.channel(i)].priority_class;
    }
    if (op.kind == OpKind::Send)
      h.cls = HotOp::Send;
    else if (op.kind == OpKind::Recv)
      h.cls = HotOp::Recv;
    else if (op.is_communication())
      h.cls = HotOp::Collective;
    else if (op.labels.phase == schedules::Phase::Forward)
      h.cls = HotOp::ComputeForward;
    else if (op.labels.phase == schedules::Phase::Backward || op.labels.phase == schedules::Phase::Recompute)
      h.cls = HotOp::ComputeBackward;
    h.value = op.is_communication() ? op.bytes : times.seconds(op);
  }
  const std::vector<int32_t> distinct = distinct_priorities(priority, program_id);
  if (too_many_deps >= 0)
    throw ScheduleError("program " + std::to_string(program_id) + " op " + std::to_string(too_many_deps) + ": " +
                        std::to_string(p.ops[static_cast<size_t>(too_many_deps)].dep_count) +
                        " dependencies (at most 65535)");
  // runs of ops share a priority: the last one's rank is reused without a search
  uint16_t rank = 0;
  for (size_t i = 0; i < hot.size(); ++i) {
    if (i == 0 || priority[i] != priority[i - 1])
      rank = static_cast<uint16_t>(std::lower_bound(distinct.begin(), distinct.end(), priority[i]) - distinct.begin());
    hot[i].priority = rank;
  }
  return hot;
}

/// Each dependency of the program (its CSR, same indexing) as position << 3 | stream:
/// checking one reads this array in order instead of the dependency's hot record.
std::vector<uint32_t> dependency_positions(const schedules::ProgramIndex& ix, size_t program_id) {
  static_assert(schedules::kStreamCount <= 8);
  const schedules::Program& p = ix.program();
  std::vector<uint32_t> out(p.deps.size());
  for (size_t i = 0; i < p.deps.size(); ++i) {
    const uint32_t d = p.deps[i];
    if (d >= p.ops.size() || ix.position(d) >= (uint32_t{1} << 29))
      throw ScheduleError("program " + std::to_string(program_id) + ": dependency " + std::to_string(d) +
                          " outside the program or past 2^29 ops on its stream");
    out[i] = ix.position(d) << 3 | static_cast<uint32_t>(p.ops[d].stream);
  }
  return out;
}

/// Refuses a schedule whose members disagree on a collective or a message (rules 2, 3).
void check_matching(const schedules::ExecutionRules& rules) {
  auto v = rules.check_collectives(1);
  if (v.empty()) v = rules.check_messages(1);
  if (!v.empty()) throw ScheduleError(v.front().reason);
}

} // namespace

SimExecutor::SimExecutor(const schedules::Schedule& schedule, const std::vector<int64_t>& gpu_of_rank,
                         const SimOptions& options, const DeviceModel& device, const NetworkPaths& paths,
                         schedules::RankCoord representative, std::vector<const DeviceModel*> models)
    : schedule_(schedule), gpu_of_rank_(gpu_of_rank), options_(options), device_(device), paths_(paths),
      collectives_(paths, options), rules_(schedule, options.helper_thread), models_(std::move(models)),
      rep_(representative) {
  const auto& L = schedule_.layout;
  const int64_t world = L.world();
  if (world >= (int64_t{1} << 29)) throw ScheduleError("schedule: " + std::to_string(world) + " ranks (at most 2^29)");
  if (static_cast<int64_t>(schedule_.program_of_rank.size()) != world)
    throw ScheduleError("schedule: program_of_rank has " + std::to_string(schedule_.program_of_rank.size()) +
                        " entries, the layout has " + std::to_string(world) + " ranks");
  if (static_cast<int64_t>(gpu_of_rank_.size()) != world)
    throw ScheduleError("placement: " + std::to_string(gpu_of_rank_.size()) + " GPUs given for " +
                        std::to_string(world) + " ranks");
  const int64_t gpus = paths_.fabric().gpus();
  for (int64_t r = 0; r < world; ++r) {
    const int64_t g = gpu_of_rank_[static_cast<size_t>(r)];
    if (g < 0 || g >= gpus)
      throw ScheduleError("placement: rank " + std::to_string(r) + " on GPU " + std::to_string(g) +
                          ", the fabric has GPUs 0.." + std::to_string(gpus - 1));
    if (schedule_.program_of_rank[static_cast<size_t>(r)] >= schedule_.programs.size())
      throw ScheduleError("schedule: rank " + std::to_string(r) + " names program " +
                          std::to_string(schedule_.program_of_rank[static_cast<size_t>(r)]) + " of " +
                          std::to_string(schedule_.programs.size()));
  }
  if (!options_.gpu_speed.empty() && static_cast<int64_t>(options_.gpu_speed.size()) != gpus)
    throw SimError("gpu speeds: " + std::to_string(options_.gpu_speed.size()) + " factors given, the fabric has " +
                   std::to_string(gpus) + " GPUs");
  for (size_t g = 0; g < options_.gpu_speed.size(); ++g) {
    const double f = options_.gpu_speed[g];
    if (!(f >= schedules::kMinGpuSpeedFactor && f <= schedules::kMaxGpuSpeedFactor)) {
      char why[160];
      std::snprintf(why, sizeof why, "gpu speeds: GPU %zu has factor %g (valid: %g to %g, 1 = nominal)", g, f,
                    schedules::kMinGpuSpeedFactor, schedules::kMaxGpuSpeedFactor);
      throw SimError(why);
    }
  }
  if (models_.size() > 1) {
    if (models_.size() > UINT8_MAX) throw ScheduleError("cluster: more than 255 GPU models");
    const auto& spec = paths_.fabric().spec();
    model_of_gpu_.resize(static_cast<size_t>(gpus));
    for (int64_t g = 0; g < gpus; ++g) {
      const size_t m = topology::gpu_model_of_server(spec, paths_.fabric().server_of_gpu(g));
      TWINSCALE_ASSERT(m < models_.size(), "a GPU group without its device model");
      model_of_gpu_[static_cast<size_t>(g)] = static_cast<uint8_t>(m);
    }
  } else {
    models_.assign(1, &device_);
  }
  // each program's hot records (one set per GPU model), then its dependency positions,
  // each in its place whichever thread makes it (the same first error as in order)
  const size_t programs = schedule_.programs.size();
  hot_.resize(programs * models_.size());
  dep_at_.resize(programs);
  for_each_index_with_helper(hot_.size(), options_.helper_thread, [&](size_t i) {
    const size_t p = i / models_.size();
    hot_[i] = hot_ops(rules_.program(p), p, *models_[i % models_.size()]);
  });
  for_each_index_with_helper(programs, options_.helper_thread,
                             [&](size_t p) { dep_at_[p] = dependency_positions(rules_.program(p), p); });
  if (schedule_.job.options.host_seconds_per_call() > 0)
    for (const auto& program : schedule_.programs)
      host_issue_s_.push_back(
          host_issue_times(program, schedule_.names, schedule_.job.options.host_seconds_per_call()));
  if (const auto by_name = te_ub_sms_by_name(schedule_.names, schedule_.job.options.overlap); !by_name.empty())
    for (const auto& program : schedule_.programs) tp_sms_.push_back(te_ub_sms(program, by_name));
  check_matching(rules_);

  shortcuts_ = options_.aggregate;
  decide_symmetry();

  slot_of_rank_.assign(static_cast<size_t>(world), -1);
  slot_rank_ = symmetric_ ? symmetric_ranks(L, rep_) : every_rank_slots();
  for (size_t s = 0; s < slot_rank_.size(); ++s)
    slot_of_rank_[static_cast<size_t>(slot_rank_[s])] = static_cast<int32_t>(s);
  if (options_.hang_rank >= 0) {
    if (symmetric_ || options_.hang_rank >= world)
      throw ScheduleError("hang rank " + std::to_string(options_.hang_rank) +
                          ": needs every rank executed and a rank in 0.." + std::to_string(world - 1));
    hang_slot_ = slot_of_rank_[static_cast<size_t>(options_.hang_rank)];
  }

  std::vector<bool> traced(slot_rank_.size(), false);
  if (options_.record_trace) {
    if (options_.trace_ranks.empty()) traced.assign(slot_rank_.size(), true);
    for (int64_t r : options_.trace_ranks)
      if (r >= 0 && r < world) traced[static_cast<size_t>(representative_slot(r))] = true;
  }
  slots_.resize(slot_rank_.size());
  for (size_t s = 0; s < slot_rank_.size(); ++s) {
    Slot& sl = slots_[s];
    sl.rank = slot_rank_[s];
    const uint32_t pid = schedule_.program_of_rank[static_cast<size_t>(sl.rank)];
    sl.program = &schedule_.programs[pid];
    sl.index = &rules_.program(pid);
    const int64_t gpu = gpu_of_rank_[static_cast<size_t>(sl.rank)];
    const size_t model = model_of_gpu_.empty() ? 0 : model_of_gpu_[static_cast<size_t>(gpu)];
    sl.hot = hot_[pid * models_.size() + model].data();
    sl.dep_at = dep_at_[pid].data();
    if (!host_issue_s_.empty()) sl.host_issue = host_issue_s_[pid].data();
    if (!tp_sms_.empty()) sl.tp_sms = tp_sms_[pid].data();
    for (int st = 0; st < schedules::kStreamCount; ++st)
      if (!sl.index->stream_ops(static_cast<size_t>(st)).empty()) sl.streams |= static_cast<uint8_t>(1u << st);
    sl.speed = options_.gpu_speed.empty() ? 1.0 : options_.gpu_speed[static_cast<size_t>(gpu)];
    sl.issue_gap = models_[model]->params().op_issue_gap_s;
    has_issue_gap_ = has_issue_gap_ || sl.issue_gap > 0;
    sl.account.set_pipelined(L.pp > 1);
    sl.wait_stream.fill(kNoWait);
    if (traced[s]) sl.timing.resize(sl.program->ops.size());
    ops_total_ += static_cast<int64_t>(sl.program->ops.size());
    slot_gpu_.push_back(gpu);
  }
  plan_jitter();
  if (options_.show_progress) progress_ = std::make_unique<Progress>("simulated ops", ops_total_, "ops");
  // Group of each slot per kind: its first member, how many members are executed and
  // a dense index for its state.
  std::array<std::unordered_map<int64_t, uint32_t>, kGroupKinds> id_of_first;
  for (Slot& sl : slots_) {
    for (int k = 0; k < kGroupKinds; ++k) {
      const auto ki = static_cast<size_t>(k);
      if (k == static_cast<int>(GroupKind::World)) {
        sl.group_first[ki] = 0;
        sl.group_needed[ki] = static_cast<int32_t>(slots_.size());
      } else {
        const auto members = L.group_members(static_cast<GroupKind>(k), sl.rank);
        sl.group_first[ki] = members.front();
        for (int64_t m : members) sl.group_needed[ki] += slot_of_rank_[static_cast<size_t>(m)] >= 0 ? 1 : 0;
      }
      const auto [it, fresh] =
          id_of_first[ki].try_emplace(sl.group_first[ki], static_cast<uint32_t>(id_of_first[ki].size()));
      sl.group_id[ki] = it->second;
      if (fresh) groups_[ki].emplace_back();
    }
  }
}

std::vector<int64_t> SimExecutor::symmetric_ranks(const schedules::Layout& L, schedules::RankCoord rep) {
  std::vector<int64_t> ranks;
  for (int64_t pp = 0; pp < L.pp; ++pp)
    for (int64_t k = 0; k < L.cp; ++k) ranks.push_back(L.rank({rep.tp, rep.dp / L.cp * L.cp + k, pp}));
  return ranks;
}

/// Symmetry holds when every rank of a stage runs its stage's program at one speed and
/// p2p only travels along pipelines (so the executed ranks only ever talk to executed
/// ranks).
void SimExecutor::decide_symmetry() {
  const auto& L = schedule_.layout;
  symmetric_ = options_.aggregate && !options_.every_rank;
  for (int64_t r = 0; symmetric_ && r < L.world(); ++r) {
    const auto c = L.coord(r);
    if (schedule_.program_of_rank[static_cast<size_t>(r)] !=
        schedule_.program_of_rank[static_cast<size_t>(representative_of(c))])
      symmetric_ = false;
  }
  // a send or receive on another group than the pipeline's, the embedding's or the cp
  // ring's: read from the programs' channels (each p2p op is on the channel of its group
  // and direction), not from every op
  for (size_t p = 0; symmetric_ && p < schedule_.programs.size(); ++p)
    for (const schedules::Channel& c : rules_.program(p).channels())
      if (c.dir != schedules::ChannelDir::Collective && c.group != GroupKind::Pp && c.group != GroupKind::Embedding &&
          c.group != GroupKind::Cp)
        symmetric_ = false;
  // link degradations and jitter hit single groups or ranks
  if (options_.faults != nullptr && faults::has_rank_specific_events(*options_.faults)) symmetric_ = false;
  for (int64_t r = 0; symmetric_ && !model_of_gpu_.empty() && r < L.world(); ++r) // mixed GPU models
    if (model_of_gpu_[static_cast<size_t>(gpu_of_rank_[static_cast<size_t>(r)])] !=
        model_of_gpu_[static_cast<size_t>(gpu_of_rank_[0])])
      symmetric_ = false;
  if (symmetric_ && !options_.gpu_speed.empty()) {
    const double first = options_.gpu_speed[static_cast<size_t>(gpu_of_rank_[0])];
    for (int64_t r = 0; symmetric_ && r < L.world(); ++r)
      if (options_.gpu_speed[static_cast<size_t>(gpu_of_rank_[static_cast<size_t>(r)])] != first) symmetric_ = false;
  }
}

} // namespace twinscale::sim::detail
