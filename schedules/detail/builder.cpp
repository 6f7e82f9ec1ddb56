#include "schedules/detail/builder.hpp"

#include <algorithm>
#include <cstring>

#include "schedules/error.hpp"

namespace twinscale::schedules::detail {

namespace {
/// The memo's key of a name: its length and its first and last (up to) eight characters.
size_t name_memo_key(std::string_view name) {
  uint64_t head = 0, tail = 0;
  if (name.size() >= 8) {
    std::memcpy(&head, name.data(), 8);
    std::memcpy(&tail, name.data() + name.size() - 8, 8);
  } else {
    for (char c : name) head = head << 8 | static_cast<uint8_t>(c);
  }
  const uint64_t h = ((head * 0x9e3779b97f4a7c15ULL) ^ tail ^ name.size()) * 0xff51afd7ed558ccdULL;
  return static_cast<size_t>(h >> 56); // the top byte: a slot of the 256
}
} // namespace

uint32_t NameTable::intern(std::string_view name) {
  MemoSlot& slot = memo_[name_memo_key(name) % kMemoSlots];
  if (slot.used && names_[slot.id] == name) return slot.id;
  uint32_t id;
  if (auto it = index_.find(name); it != index_.end()) {
    id = it->second;
  } else {
    id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    index_.emplace(std::string(name), id);
  }
  slot = MemoSlot{true, id};
  return id;
}

Dims Dims::of(const JobSpec& job) {
  Dims d;
  d.b = job.parallel.micro_batch;
  d.cp = job.parallel.cp;
  d.s_full = job.model.seq_len;
  d.s = job.model.seq_len / d.cp;
  d.h = job.model.hidden;
  d.a = job.model.heads;
  d.f = job.model.ffn_hidden;
  d.t = job.parallel.tp;
  d.vocab = job.model.vocab;
  d.window = job.model.attention == AttentionKind::Sliding ? job.model.window : 0;
  d.tokens = d.b * d.s;
  d.sp = job.parallel.sequence_parallel && d.t > 1;
  d.tokens_local = d.sp ? d.tokens / d.t : d.tokens;
  d.tp_chunks = (job.options.overlap.tp && d.t > 1) ? job.options.overlap.tp_chunks : 1;
  d.qkv = d.h + 2 * job.model.kv() * (d.h / d.a);
  d.swiglu = job.model.mlp == MlpKind::SwiGlu;
  d.squared_relu = job.model.mlp == MlpKind::SquaredRelu;
  d.fc1 = d.swiglu ? 2 * d.f : d.f;
  d.rmsnorm = job.model.norm == NormKind::RmsNorm;
  d.experts = job.model.experts;
  d.ep = job.parallel.ep;
  d.experts_local = d.experts / d.ep;
  d.top_k = job.model.top_k;
  d.fm = job.model.expert_ffn();
  d.fc1m = d.swiglu ? 2 * d.fm : d.fm;
  d.shared_experts = job.model.shared_experts;
  return d;
}

uint32_t ProgramBuilder::add(const Op& op, std::string_view name, std::initializer_list<uint32_t> deps) {
  return add_op(op, name, std::span<const uint32_t>(deps.begin(), deps.size()));
}

uint32_t ProgramBuilder::add(const Op& op, std::string_view name, const std::vector<uint32_t>& deps) {
  return add_op(op, name, deps);
}

uint32_t ProgramBuilder::add_op(const Op& op, std::string_view name, std::span<const uint32_t> deps) {
  const auto index = static_cast<uint32_t>(program_.ops.size());
  std::vector<uint32_t>& all = scratch_deps_;
  all.clear();
  for (uint32_t d : deps)
    if (d != kNoOp) all.push_back(d);
  const bool is_compute = !op.is_communication();
  if (is_compute) {
    for (uint32_t d : pending_) all.push_back(d); // (a few: cheaper than a range insert)
    pending_.clear();
  }
  if (all.size() > 1) {
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
  }
  for (uint32_t d : all) TWINSCALE_ASSERT(d < index, "dependency on a later op");
  const auto dep_begin = static_cast<uint32_t>(program_.deps.size());
  for (uint32_t d : all) program_.deps.push_back(d);
  const uint32_t name_id = names_->intern(name);
  // the op is copied once, straight into the program, and completed there
  Op& added = program_.ops.emplace_back(op);
  added.dep_begin = dep_begin;
  added.dep_count = static_cast<uint32_t>(all.size());
  added.labels = labels;
  added.name = name_id;
  if (is_compute && added.stream == Stream::Compute) last_compute_ = index;
  return index;
}

uint32_t ProgramBuilder::compute(OpKind kind, Kernel kernel, std::string_view name, double flops, double bytes,
                                 std::array<int64_t, 4> shape, std::initializer_list<uint32_t> deps, DType dtype) {
  Op op;
  op.kind = kind;
  op.kernel = kernel;
  op.dtype = dtype;
  op.stream = Stream::Compute;
  op.flops = flops;
  op.bytes = bytes;
  op.shape = shape;
  return add(op, name, deps);
}

namespace {
Op collective_op(OpKind kind, GroupKind group, Stream stream, double bytes, int32_t priority, DType dtype) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.group = group;
  op.bytes = bytes;
  op.priority = priority;
  op.dtype = dtype;
  return op;
}
} // namespace

uint32_t ProgramBuilder::collective(OpKind kind, GroupKind group, Stream stream, std::string_view name, double bytes,
                                    const std::vector<uint32_t>& deps, int32_t priority, DType dtype) {
  return add(collective_op(kind, group, stream, bytes, priority, dtype), name, deps);
}

uint32_t ProgramBuilder::collective(OpKind kind, GroupKind group, Stream stream, std::string_view name, double bytes,
                                    std::initializer_list<uint32_t> deps, int32_t priority, DType dtype) {
  return add(collective_op(kind, group, stream, bytes, priority, dtype), name, deps);
}

uint32_t ProgramBuilder::p2p(OpKind kind, int32_t peer, std::string_view name, double bytes,
                             const std::vector<uint32_t>& deps, GroupKind group) {
  TWINSCALE_ASSERT(group == GroupKind::Pp || group == GroupKind::Cp, "p2p on a group without its streams");
  Op op;
  op.kind = kind;
  if (group == GroupKind::Cp)
    op.stream = kind == OpKind::Send ? Stream::CpSend : Stream::CpRecv;
  else
    op.stream = kind == OpKind::Send ? Stream::PpSend : Stream::PpRecv;
  op.group = group;
  op.peer = peer;
  op.bytes = bytes;
  return add(op, name, deps);
}

std::optional<ProgramBuilder::Context> ProgramBuilder::context() const {
  if (last_compute_ == kNoOp) return std::nullopt;
  const auto next = static_cast<uint32_t>(program_.ops.size());
  Context c;
  c.last_compute_back = next - last_compute_;
  c.pending_back.reserve(pending_.size());
  for (uint32_t p : pending_) c.pending_back.push_back(next - p);
  return c;
}

std::optional<ProgramBuilder::Span> ProgramBuilder::span_since(uint32_t begin, const Context& before,
                                                               const OpLabels& at) const {
  const auto end = static_cast<uint32_t>(program_.ops.size());
  if (begin >= end || last_compute_ == kNoOp) return std::nullopt;
  // an op before `begin` that the state at `begin` names (moves with the place)
  auto named = [&](uint32_t op) {
    if (op == begin - before.last_compute_back) return true;
    return std::any_of(before.pending_back.begin(), before.pending_back.end(),
                       [&](uint32_t back) { return op == begin - back; });
  };
  Span s;
  s.begin = begin;
  s.end = end;
  s.before = before;
  s.dep_begin = program_.ops[begin].dep_begin;
  uint32_t next_dep = s.dep_begin;
  for (uint32_t i = begin; i < end; ++i) {
    const Op& op = program_.ops[i];
    if (op.labels.iteration != at.iteration || op.labels.micro_batch != at.micro_batch || op.labels.chunk != at.chunk ||
        op.labels.layer != at.layer)
      return std::nullopt;
    if (op.dep_begin != next_dep) return std::nullopt;
    next_dep += op.dep_count;
    for (uint32_t d : program_.deps_of(op))
      if (d < begin && !named(d)) return std::nullopt;
  }
  s.dep_end = next_dep;
  if (last_compute_ < begin && !named(last_compute_)) return std::nullopt;
  s.after.last_compute_back = end - last_compute_;
  for (uint32_t p : pending_) {
    if (p < begin && !named(p)) return std::nullopt;
    s.after.pending_back.push_back(end - p);
  }
  return s;
}

namespace {
/// Room for `more` elements past the end, grown as push_back grows (doubling), so the
/// elements copied from within the vector stay where they are while they are appended.
template <class T>
void make_room(std::vector<T>& v, size_t more) {
  if (v.size() + more > v.capacity()) v.reserve(std::max(v.size() + more, 2 * v.capacity()));
}
} // namespace

void ProgramBuilder::replay(const Span& s) {
  const auto start = static_cast<uint32_t>(program_.ops.size());
  TWINSCALE_ASSERT(s.begin < s.end && s.end <= start, "replay: a span that is not earlier in the program");
  const uint32_t shift = start - s.begin;
  const auto dep_shift = static_cast<uint32_t>(program_.deps.size()) - s.dep_begin;
  make_room(program_.deps, s.dep_end - s.dep_begin);
  for (uint32_t j = s.dep_begin; j < s.dep_end; ++j) program_.deps.push_back(program_.deps[j] + shift);
  make_room(program_.ops, s.end - s.begin);
  for (uint32_t i = s.begin; i < s.end; ++i) {
    Op& op = program_.ops.emplace_back(program_.ops[i]);
    op.dep_begin += dep_shift;
    op.labels.iteration = labels.iteration;
    op.labels.micro_batch = labels.micro_batch;
    op.labels.chunk = labels.chunk;
    op.labels.layer = labels.layer; // the phase stays the op's own
  }
  const auto end = static_cast<uint32_t>(program_.ops.size());
  last_compute_ = end - s.after.last_compute_back;
  pending_.clear();
  for (uint32_t back : s.after.pending_back) pending_.push_back(end - back);
}

void ProgramBuilder::wait_before_next_compute(uint32_t op) {
  if (op != kNoOp) pending_.push_back(op);
}

void ProgramBuilder::wait_before_next_compute(const std::vector<uint32_t>& ops) {
  for (uint32_t op : ops) wait_before_next_compute(op);
}

} // namespace twinscale::schedules::detail
