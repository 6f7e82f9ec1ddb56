// A trace of any kind (twinscale's or Kineto), and a Kineto trace mapped onto the ops of a
// twinscale trace or schedule so that compare and calibrate can time them
// (formats/kineto.hpp).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "formats/kineto.hpp"
#include "schedules/error.hpp"

namespace twinscale::formats {

namespace s = twinscale::schedules;

AnyTrace read_any_trace(const std::vector<std::string>& paths) {
  if (paths.empty()) throw s::ScheduleError("no trace given");
  AnyTrace t;
  std::vector<std::string> files = paths;
  if (paths.size() == 1 && std::filesystem::is_directory(paths[0])) {
    files = kineto_files_in(paths[0]);
    if (files.empty())
      throw s::ScheduleError(paths[0] + ": a directory is read as PyTorch profiler traces, one <name>.json per "
                                        "rank, and this one has no .json file");
  }
  const bool kineto = std::all_of(files.begin(), files.end(), [](const std::string& p) { return is_kineto_trace(p); });
  if (!kineto && files.size() > 1) {
    for (const auto& p : files)
      if (!is_kineto_trace(p))
        throw s::ScheduleError(p + ": not a PyTorch profiler (Kineto) trace; several files are read as one trace "
                                   "only when each is one rank's Kineto trace");
  }
  if (!kineto) {
    t.records = s::read_chrome_trace_file(files[0], &t.hosts);
    return t;
  }
  KinetoTrace k = read_kineto_traces(files);
  t.records = std::move(k.records);
  t.source = "kineto";
  t.device = std::move(k.device);
  t.kineto = true;
  t.notes = std::move(k.notes);
  return t;
}

std::vector<s::TraceRecord> schedule_records(const s::Schedule& schedule) {
  std::vector<s::TraceRecord> out;
  for (int64_t rank = 0; rank < schedule.world(); ++rank) {
    const s::Program& p = schedule.program(rank);
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const s::Op& op = p.ops[i];
      s::TraceRecord r;
      r.rank = rank;
      r.op_index = static_cast<uint32_t>(i);
      r.kind = op.kind;
      r.stream = op.stream;
      r.name = op.name < schedule.names.size() ? schedule.names[op.name] : std::string();
      r.labels = op.labels;
      r.bytes = op.bytes;
      out.push_back(std::move(r));
    }
  }
  return out;
}

namespace {

/// The class a record pairs within: -1 compute (on the compute stream), the kind for
/// communication; nullopt for ops not aligned (the data stream's copies).
std::optional<int> align_class(const s::TraceRecord& r) {
  s::Op op;
  op.kind = r.kind;
  if (op.is_communication()) return static_cast<int>(r.kind);
  if (r.stream == s::Stream::Data) return std::nullopt;
  return -1;
}

std::string class_name(int c, bool kernels) {
  if (c < 0) return kernels ? "compute kernels" : "compute ops";
  return std::string(s::to_string(static_cast<s::OpKind>(c))) + (kernels ? " kernels" : " ops");
}

using ByClass = std::map<int, std::vector<const s::TraceRecord*>>;

/// Records of each rank by class, in op order.
std::map<int64_t, ByClass> by_rank_and_class(const std::vector<s::TraceRecord>& records) {
  std::map<int64_t, ByClass> out;
  for (const s::TraceRecord& r : records)
    if (const auto c = align_class(r)) out[r.rank][*c].push_back(&r);
  for (auto& [rank, classes] : out)
    for (auto& [c, list] : classes)
      std::sort(list.begin(), list.end(), [](auto* a, auto* b) { return a->op_index < b->op_index; });
  return out;
}

} // namespace

std::vector<s::TraceRecord> align_kineto(const std::vector<s::TraceRecord>& kineto, const std::string& kineto_path,
                                         const std::vector<s::TraceRecord>& reference,
                                         const std::string& reference_path) {
  const auto k = by_rank_and_class(kineto);
  const auto ref = by_rank_and_class(reference);
  const std::string why = ": a PyTorch profiler trace maps onto twinscale's ops only when it launches one kernel per "
                          "op, in the schedule's order (a PyTorch run launches several kernels for most ops: "
                          "compare two Kineto traces of one program instead)";
  std::vector<s::TraceRecord> out;
  for (const auto& [rank, classes] : k) {
    const auto rit = ref.find(rank);
    if (rit == ref.end())
      throw s::ScheduleError(kineto_path + ": rank " + std::to_string(rank) + " has kernels but " + reference_path +
                             " has no op of that rank: the traces are not of the same job");
    std::map<int, size_t> counts;
    for (const auto& [c, list] : classes) counts[c] = list.size();
    for (const auto& [c, list] : rit->second) counts.emplace(c, 0);
    for (const auto& [c, n] : counts) {
      const auto kc = classes.find(c);
      const auto rc = rit->second.find(c);
      const size_t nk = kc == classes.end() ? 0 : kc->second.size();
      const size_t nr = rc == rit->second.end() ? 0 : rc->second.size();
      if (nk != nr)
        throw s::ScheduleError(kineto_path + ": rank " + std::to_string(rank) + " has " + std::to_string(nk) + " " +
                               class_name(c, true) + " but " + reference_path + " has " + std::to_string(nr) + " " +
                               class_name(c, false) + why);
      for (size_t i = 0; i < nk; ++i) {
        const s::TraceRecord& a = *kc->second[i];
        const s::TraceRecord& b = *rc->second[i];
        if (c >= 0 && a.bytes > 0 && b.bytes > 0 && std::abs(a.bytes - b.bytes) > 1e-6 * b.bytes)
          throw s::ScheduleError(kineto_path + ": rank " + std::to_string(rank) + ": " + class_name(c, true) + " #" +
                                 std::to_string(i) + " (\"" + a.name + "\") moves " + std::to_string(a.bytes) +
                                 " bytes but its op in " + reference_path + " (op " + std::to_string(b.op_index) +
                                 ", \"" + b.name + "\") " + std::to_string(b.bytes) +
                                 ": the collectives are not in the schedule's order, or not of this schedule");
        s::TraceRecord r = b;
        r.start_s = a.start_s;
        r.duration_s = a.duration_s;
        r.failed = false;
        if (r.instance.empty()) r.instance = a.instance; // a schedule's ops: the process group's numbering
        out.push_back(std::move(r));
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const s::TraceRecord& a, const s::TraceRecord& b) {
    return a.rank != b.rank ? a.rank < b.rank : a.op_index < b.op_index;
  });
  return out;
}

} // namespace twinscale::formats
