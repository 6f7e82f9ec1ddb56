// Static checks of a schedule: structure, dependencies, collective sequences per group and
// send/receive pairing (the checkers of execution_rules.hpp), memory; the deadlock and
// NCCL-order checks are one abstract execution, detail/abstract_execution.cpp.
//
// Sharing: the checks work on programs, not ranks, wherever the property is a property
// of the programs involved (a group whose members run the same program trivially issues
// the same collectives; a rank pair's messages are compared once per pair of programs
// and pp positions), so a 12,288-rank schedule with eight programs costs little more
// than an eight-rank one.
#include "schedules/validate.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "schedules/calibration.hpp"
#include "schedules/detail/abstract_execution.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {

std::string_view to_string(ViolationKind k) {
  switch (k) {
  case ViolationKind::Structure: return "structure";
  case ViolationKind::Dependency: return "dependency";
  case ViolationKind::CollectiveMismatch: return "collective mismatch";
  case ViolationKind::UnmatchedP2p: return "unmatched send/recv";
  case ViolationKind::Deadlock: return "deadlock";
  case ViolationKind::Memory: return "memory";
  case ViolationKind::NcclOrder: return "nccl order";
  }
  return "?";
}

std::string describe_labels(const OpLabels& l) {
  std::ostringstream os;
  os << "it " << l.iteration;
  if (l.micro_batch >= 0) os << " mb " << l.micro_batch;
  if (l.chunk >= 0) os << " chunk " << l.chunk;
  if (l.layer >= 0) os << " layer " << l.layer;
  os << " " << to_string(l.phase);
  return os.str();
}

std::string describe(const Violation& v) {
  std::ostringstream os;
  if (v.rank >= 0) os << "rank " << v.rank;
  if (v.op_index >= 0) os << " op " << v.op_index << " (" << v.op_name << "; " << v.labels << ")";
  if (v.rank >= 0) os << ": ";
  os << to_string(v.kind) << ": " << v.reason;
  return os.str();
}

bool is_pp_symmetric(const Schedule& s) {
  const Layout& L = s.layout;
  if (static_cast<int64_t>(s.program_of_rank.size()) != L.world()) return false;
  for (int64_t r = 0; r < L.world(); ++r)
    if (s.program_of_rank[r] != s.program_of_rank[L.rank({0, 0, L.coord(r).pp})]) return false;
  return true;
}

namespace {

double dtype_bytes(DType d) {
  switch (d) {
  case DType::FP8: return 1;
  case DType::BF16: return 2;
  default: return 4;
  }
}

std::string mib(double bytes) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(3);
  os << bytes / (1024.0 * 1024.0) << " MiB";
  return os.str();
}

class Checker {
public:
  Checker(const Schedule& s, const ValidateOptions& o, std::vector<Violation>& out) : s_(s), o_(o), out_(out) {}

  bool full() const { return out_.size() >= o_.max_violations; }

  void add(ViolationKind kind, int64_t rank, int64_t op, std::string reason) {
    if (full()) return;
    Violation v;
    v.kind = kind;
    v.rank = rank;
    v.op_index = op;
    if (rank >= 0 && op >= 0) {
      const Op& o = s_.program(rank).ops[op];
      v.op_name = o.name < s_.names.size() ? s_.names[o.name] : "?";
      v.labels = describe_labels(o.labels);
    }
    v.reason = std::move(reason);
    out_.push_back(std::move(v));
  }

  int64_t first_rank_of_program(size_t p) const {
    for (size_t r = 0; r < s_.program_of_rank.size(); ++r)
      if (s_.program_of_rank[r] == p) return static_cast<int64_t>(r);
    return -1;
  }

  /// Returns false when the schedule is too malformed for the other checks.
  bool structure() {
    const Layout& L = s_.layout;
    if (L.tp < 1 || L.dp < 1 || L.pp < 1) {
      add(ViolationKind::Structure, -1, -1, "layout sizes must be ≥ 1");
      return false;
    }
    if (static_cast<int64_t>(s_.program_of_rank.size()) != L.world()) {
      add(ViolationKind::Structure, -1, -1,
          "program_of_rank has " + std::to_string(s_.program_of_rank.size()) + " entries; the layout has " +
              std::to_string(L.world()) + " ranks");
      return false;
    }
    bool ok = true;
    for (int64_t r = 0; r < L.world(); ++r)
      if (s_.program_of_rank[r] >= s_.programs.size()) {
        add(ViolationKind::Structure, r, -1,
            "program index " + std::to_string(s_.program_of_rank[r]) + " ≥ " + std::to_string(s_.programs.size()) +
                " programs");
        ok = false;
      }
    if (!ok) return false;
    for (size_t p = 0; p < s_.programs.size(); ++p) {
      const int64_t rank = first_rank_of_program(p);
      if (rank < 0) continue; // unused program
      const int64_t pp = L.coord(rank).pp;
      const Program& prog = s_.programs[p];
      for (size_t i = 0; i < prog.ops.size() && !full(); ++i) {
        const Op& op = prog.ops[i];
        const auto idx = static_cast<int64_t>(i);
        if (op.name >= s_.names.size()) {
          add(ViolationKind::Structure, rank, -1,
              "op " + std::to_string(i) + " names entry " + std::to_string(op.name) + " but there are " +
                  std::to_string(s_.names.size()) + " names");
          ok = false;
          continue;
        }
        if (static_cast<size_t>(op.dep_begin) + op.dep_count > prog.deps.size()) {
          add(ViolationKind::Structure, rank, idx, "dependency range outside Program::deps");
          ok = false;
          continue;
        }
        for (uint32_t d : prog.deps_of(op))
          if (d >= i) {
            add(ViolationKind::Dependency, rank, idx,
                "depends on op " + std::to_string(d) +
                    (d == i ? " (itself)" : " which comes later: a forward dependency, so a cycle is possible"));
            ok = false;
          }
        const bool matrix = op.kind == OpKind::Gemm || op.kind == OpKind::Attention;
        if (!std::all_of(op.shape.begin(), op.shape.end(),
                         [matrix](int64_t d) { return d >= 0 && d <= max_shape_dim(matrix); })) {
          add(ViolationKind::Structure, rank, idx,
              "shape {" + std::to_string(op.shape[0]) + ", " + std::to_string(op.shape[1]) + ", " +
                  std::to_string(op.shape[2]) + ", " + std::to_string(op.shape[3]) + "} has a dimension outside [0, " +
                  (matrix ? "2^31], the largest GEMM or attention dimension" : "2^40], the longest vector") +
                  " an executor takes");
          ok = false;
        }
        if (!(std::isfinite(op.bytes) && op.bytes >= 0 && std::isfinite(op.flops) && op.flops >= 0)) {
          add(ViolationKind::Structure, rank, idx, "bytes and flops must be finite and ≥ 0");
          ok = false;
        }
        if (static_cast<int>(op.stream) >= kStreamCount) {
          add(ViolationKind::Structure, rank, idx, "unknown stream");
          ok = false;
        }
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
          // pipeline p2p travels along pp; context-parallel ring p2p along cp
          const bool cp = op.group == GroupKind::Cp;
          const int64_t size = cp ? L.cp : L.pp;
          const int64_t own = cp ? L.group_rank(GroupKind::Cp, rank) : pp;
          if ((op.group != GroupKind::Pp && !cp) || op.peer < 0 || op.peer >= size || op.peer == own) {
            add(ViolationKind::Structure, rank, idx,
                "send/recv needs group pp (or cp) and a peer rank in [0, " + std::to_string(size) +
                    ") other than its own (" + std::to_string(own) + "); got group " +
                    std::string(to_string(op.group)) + ", peer " + std::to_string(op.peer));
            ok = false;
          }
        } else if (op.is_collective() && op.group == GroupKind::Embedding && L.pp > 1 && pp != 0 && pp != L.pp - 1) {
          add(ViolationKind::Structure, rank, idx,
              "embedding-group collective on pipeline stage " + std::to_string(pp) +
                  "; only the first and last stages are members");
          ok = false;
        }
      }
    }
    return ok;
  }

  // Rules 2 and 3 of schedules/execution_rules.hpp: members agree on every collective
  // instance; the k-th send of a pair meets the k-th receive with equal bytes.
  void collective_sequences(const ExecutionRules& rules) {
    for (const RuleMismatch& m : rules.check_collectives(o_.max_violations - out_.size()))
      add(ViolationKind::CollectiveMismatch, m.rank, m.op, m.reason);
  }

  void send_recv_pairs(const ExecutionRules& rules) {
    if (full()) return;
    for (const RuleMismatch& m : rules.check_messages(o_.max_violations - out_.size())) {
      const bool on_sender = m.other_op >= 0; // an extra send or bytes that differ: the send
      add(ViolationKind::UnmatchedP2p, on_sender ? m.other_rank : m.rank, on_sender ? m.other_op : m.op, m.reason);
    }
  }

  void memory() {
    if (!o_.check_memory) return;
    for (size_t p = 0; p < s_.memory_by_stage.size(); ++p) {
      const double total = s_.memory_by_stage[p].total_bytes();
      if (total > o_.gpu_memory_bytes)
        add(ViolationKind::Memory, s_.layout.rank({0, 0, static_cast<int64_t>(p)}), -1,
            "pipeline stage " + std::to_string(p) + " needs " + mib(total) + " per GPU, more than the " +
                mib(o_.gpu_memory_bytes) + " it has");
    }
    // one op's own buffer (a GEMM operand, a message) must fit the GPU by itself
    for (size_t p = 0; p < s_.programs.size() && !full(); ++p) {
      const int64_t rank = first_rank_of_program(p);
      if (rank < 0) continue;
      const Program& prog = s_.programs[p];
      for (size_t i = 0; i < prog.ops.size() && !full(); ++i) {
        const Op& op = prog.ops[i];
        const double bytes = largest_buffer_bytes(op, 1, dtype_bytes(op.dtype));
        if (bytes > o_.gpu_memory_bytes)
          add(ViolationKind::Memory, rank, static_cast<int64_t>(i),
              std::string(op.is_communication() ? "a message of " : "a kernel buffer of ") + mib(bytes) +
                  ", more than the " + mib(o_.gpu_memory_bytes) + " of GPU memory");
      }
    }
  }

private:
  const Schedule& s_;
  const ValidateOptions& o_;
  std::vector<Violation>& out_;
};

} // namespace

std::vector<Violation> validate(const Schedule& schedule, const ValidateOptions& options) {
  std::vector<Violation> out;
  Checker c(schedule, options, out);
  if (!c.structure()) return out;
  const ExecutionRules rules(schedule);
  c.collective_sequences(rules);
  c.send_recv_pairs(rules);
  const bool matched = out.empty();
  c.memory();
  // The abstract execution assumes matched collectives and messages; it runs only on a
  // schedule that passed the checks above.
  if (!matched) return out;
  // One abstract execution: under the stream semantics, and, for a schedule small enough
  // to execute every rank, with NCCL's communicator queues of the devices on top; a rank
  // stuck only by the queues is reported as such, one stuck under the streams alone as a
  // deadlock (so each report has one cause).
  const size_t before = out.size();
  if (before >= options.max_violations) return out;
  double total_ops = 0;
  for (int64_t r = 0; r < schedule.world(); ++r) total_ops += static_cast<double>(schedule.program(r).ops.size());
  detail::ExecutionModel model;
  model.by_symmetry = options.use_symmetry && is_pp_symmetric(schedule);
  model.comm_queues = options.check_nccl_order && total_ops <= options.nccl_order_max_ops;
  model.stream_fallback = true;
  for (auto& v : detail::execute(rules, model, options.max_violations - before)) out.push_back(std::move(v));
  return out;
}

} // namespace twinscale::schedules
