// Private helpers of lowering: a program under construction and the job's dimensions.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "schedules/job.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::schedules::detail {

inline constexpr uint32_t kNoOp = UINT32_MAX;

/// Op names shared by all programs of a schedule (Schedule::names).
class NameTable {
public:
  uint32_t intern(std::string_view name);
  /// The names, in id order; the table is empty afterwards.
  std::vector<std::string> take() {
    std::vector<std::string> out = std::move(names_);
    names_.clear();
    index_.clear();
    memo_.fill(MemoSlot{});
    return out;
  }

private:
  struct Hash { // heterogeneous: looks a string_view up without building a string
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> index_;
  std::vector<std::string> names_;
  // Lowering passes the same few names over and over, many of them built anew each time
  // (name + ".rs"): a direct-mapped memo keyed by the length and the first and last eight
  // characters answers most calls without hashing the whole name. A hit is confirmed by
  // comparing the characters, so names that share a slot never return a wrong id.
  static constexpr size_t kMemoSlots = 256;
  struct MemoSlot {
    bool used = false;
    uint32_t id = 0;
  };
  std::array<MemoSlot, kMemoSlots> memo_{};
};

/// The job's sizes as used by the op formulas (all per rank unless noted).
struct Dims {
  int64_t b = 1; // micro-batch (sequences)
  int64_t s = 1; // sequence length
  int64_t h = 1; // hidden
  int64_t a = 1; // heads
  int64_t f = 1; // ffn hidden
  int64_t t = 1; // tensor-parallel size
  int64_t vocab = 1;
  int64_t window = 0;       // 0 = dense attention
  int64_t tokens = 1;       // b·s
  int64_t tokens_local = 1; // b·s/t with sequence parallelism, else b·s
  bool sp = false;
  int64_t tp_chunks = 1; // > 1 only when TP overlap is on and tp > 1
  int64_t qkv = 0;       // QKV GEMM output width: h + 2·kv_heads·head_dim (before / tp)
  int64_t fc1 = 0;       // FC1 output width: f (GeLU, squared ReLU) or 2·f (SwiGLU: gate and up)
  bool swiglu = false;
  bool squared_relu = false;
  bool rmsnorm = false;
  // mixture of experts (experts = 0: dense)
  int64_t experts = 0;
  int64_t experts_local = 0; // experts / ep
  int64_t ep = 1;
  int64_t top_k = 1;
  int64_t fm = 0;   // an expert's MLP inner size
  int64_t fc1m = 0; // its FC1 output width (2·fm with SwiGLU)
  int64_t shared_experts = 0;
  // context parallelism: s above is the local sequence (seq_len / cp)
  int64_t cp = 1;
  int64_t s_full = 1; // the whole sequence (keys a query attends to, dense attention)
  static Dims of(const JobSpec& job);
};

/// A program under construction. Compute ops get the pending dependencies (results of
/// communication that the next computation must wait for) added automatically.
class ProgramBuilder {
public:
  explicit ProgramBuilder(NameTable& names) : names_(&names) {}

  OpLabels labels; // labels stamped on every op added

  uint32_t add(const Op& op, std::string_view name, std::initializer_list<uint32_t> deps = {});
  uint32_t add(const Op& op, std::string_view name, const std::vector<uint32_t>& deps);

  uint32_t compute(OpKind kind, Kernel kernel, std::string_view name, double flops, double bytes,
                   std::array<int64_t, 4> shape, std::initializer_list<uint32_t> deps = {}, DType dtype = DType::BF16);
  uint32_t collective(OpKind kind, GroupKind group, Stream stream, std::string_view name, double bytes,
                      const std::vector<uint32_t>& deps, int32_t priority = 0, DType dtype = DType::BF16);
  /// The same with the dependencies listed in place (no vector built for them).
  uint32_t collective(OpKind kind, GroupKind group, Stream stream, std::string_view name, double bytes,
                      std::initializer_list<uint32_t> deps, int32_t priority = 0, DType dtype = DType::BF16);
  /// Send or Recv to group rank `peer` of `group` (Pp: the PpSend/PpRecv streams; Cp:
  /// CpSend/CpRecv).
  uint32_t p2p(OpKind kind, int32_t peer, std::string_view name, double bytes, const std::vector<uint32_t>& deps,
               GroupKind group = GroupKind::Pp);

  /// The next compute op waits for `op` (kNoOp ignored).
  void wait_before_next_compute(uint32_t op);
  void wait_before_next_compute(const std::vector<uint32_t>& ops);
  /// The most recent compute op (kNoOp if none yet).
  uint32_t last_compute() const { return last_compute_; }
  size_t size() const { return program_.ops.size(); }
  void reserve(size_t ops, size_t deps) {
    program_.ops.reserve(ops);
    program_.deps.reserve(deps);
  }
  const Program& program() const { return program_; }
  Program take() { return std::move(program_); }

  // Replaying a run of ops (LayerEmitter's layer passes). What later ops depend on
  // without naming it is the builder's state: the latest compute op and the ops the next
  // compute op waits for. Taken as distances back from the next op's index, that state is
  // equal at two places of a program where the ops before them stand in the same relation,
  // and the same emission code then emits the same ops there, every dependency shifted by
  // the distance between the two places.
  struct Context {
    uint32_t last_compute_back = 0;     // next index − latest compute op
    std::vector<uint32_t> pending_back; // next index − each op the next compute op waits for
    bool operator==(const Context&) const = default;
  };
  /// The state now; none before the program's first compute op.
  std::optional<Context> context() const;
  /// Ops [begin, end) of the program, emitted from the state `before`, with the state
  /// after them (distances back from `end`).
  struct Span {
    uint32_t begin = 0, end = 0;
    uint32_t dep_begin = 0, dep_end = 0; // their dependencies, contiguous in Program::deps
    Context before, after;
  };
  /// The ops emitted since `begin` (where the state was `before` and the labels
  /// `labels_at_begin`) as a span that replay() can copy exactly — none unless every
  /// dependency on an op before `begin`, and every op of the state after them that lies
  /// before `begin`, is one that `before` names (so it moves with the place), and every op
  /// carries the iteration, micro-batch, chunk and layer of `labels_at_begin` (replay()
  /// stamps the labels then in effect).
  std::optional<Span> span_since(uint32_t begin, const Context& before, const OpLabels& labels_at_begin) const;
  /// Appends a copy of `span` here, where context() == span.before: each op with its
  /// dependencies shifted by (size() − span.begin), its iteration, micro-batch, chunk and
  /// layer from `labels` (its phase its own); the state after is the span's after.
  void replay(const Span& span);

private:
  /// Appends `op` (copied once, into the program) with its dependencies, labels and name.
  uint32_t add_op(const Op& op, std::string_view name, std::span<const uint32_t> deps);

  NameTable* names_;
  Program program_;
  std::vector<uint32_t> pending_;
  std::vector<uint32_t> scratch_deps_; // add_op's dependency list, reused
  uint32_t last_compute_ = kNoOp;
};

} // namespace twinscale::schedules::detail
