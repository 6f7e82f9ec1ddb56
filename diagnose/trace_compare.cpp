#include "diagnose/trace_compare.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <unordered_map>

#include "schedules/error.hpp"

namespace twinscale::diagnose {

using schedules::TraceRecord;

namespace {

struct Span {
  double first = std::numeric_limits<double>::infinity();
  double last = -std::numeric_limits<double>::infinity();
  void add(const TraceRecord& r) {
    first = std::min(first, r.start_s);
    last = std::max(last, r.start_s + r.duration_s);
  }
  double length() const { return last > first ? last - first : 0; }
};

/// Per collective instance that a trace holds (TraceRecord::instance): its last member's
/// start and its last member's end, over the members in the trace.
struct Instance {
  double last_start = 0, last_end = 0;
};

std::unordered_map<std::string, Instance> instances(const std::vector<TraceRecord>& t) {
  std::unordered_map<std::string, Instance> out;
  for (const TraceRecord& r : t) {
    schedules::Op op;
    op.kind = r.kind;
    if (r.instance.empty() || !op.is_collective()) continue;
    const double end = r.start_s + r.duration_s;
    auto [it, fresh] = out.emplace(r.instance, Instance{r.start_s, end});
    if (!fresh) {
      it->second.last_start = std::max(it->second.last_start, r.start_s);
      it->second.last_end = std::max(it->second.last_end, end);
    }
  }
  return out;
}

/// An op's time for the per-kind errors and the calibration: a collective's is its
/// instance's, last end − last start (the probe's measure; the simulator ends every
/// member at once); any other op's its duration.
double op_time(const TraceRecord& r, const std::unordered_map<std::string, Instance>& all) {
  if (r.instance.empty()) return r.duration_s;
  const auto it = all.find(r.instance);
  if (it == all.end()) return r.duration_s;
  return std::max(0.0, it->second.last_end - it->second.last_start);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

} // namespace

TraceComparison compare_traces(const std::vector<TraceRecord>& a, const std::string& a_path,
                               const std::vector<TraceRecord>& b, const std::string& b_path) {
  std::map<std::pair<int64_t, uint32_t>, const TraceRecord*> in_b;
  for (const TraceRecord& r : b) in_b[{r.rank, r.op_index}] = &r;
  TraceComparison c;
  struct Acc {
    std::vector<double> rel, op_rel;
    double a_sum = 0, b_sum = 0;
    bool waits_excluded = false;
  };
  const auto last_a = instances(a), last_b = instances(b);
  std::map<std::string, Acc> kinds;
  std::map<int64_t, std::pair<Span, Span>> ranks;
  std::map<int64_t, int64_t> rank_ops;
  Span all_a, all_b;
  std::map<std::pair<int64_t, uint32_t>, bool> used_b;
  for (const TraceRecord& ra : a) {
    all_a.add(ra);
    auto it = in_b.find({ra.rank, ra.op_index});
    if (it == in_b.end() || ra.failed || it->second->failed) {
      ++c.only_a;
      continue;
    }
    const TraceRecord& rb = *it->second;
    used_b[{rb.rank, rb.op_index}] = true;
    if (ra.kind != rb.kind || ra.name != rb.name)
      throw schedules::ScheduleError("compare: rank " + std::to_string(ra.rank) + " op " + std::to_string(ra.op_index) +
                                     " is " + std::string(schedules::to_string(ra.kind)) + " \"" + ra.name + "\" in " +
                                     a_path + " but " + std::string(schedules::to_string(rb.kind)) + " \"" + rb.name +
                                     "\" in " + b_path + ": the traces are not of the same schedule");
    ++c.matched;
    Acc& k = kinds[std::string(schedules::to_string(ra.kind))];
    // Collectives whose instance both traces name: the instance's last end − last start.
    const bool transfer =
        !ra.instance.empty() && !rb.instance.empty() && last_a.count(ra.instance) && last_b.count(rb.instance);
    const double ta = transfer ? op_time(ra, last_a) : ra.duration_s;
    const double tb = transfer ? op_time(rb, last_b) : rb.duration_s;
    k.waits_excluded = k.waits_excluded || transfer;
    k.a_sum += ta;
    k.b_sum += tb;
    if (ta > 0) k.rel.push_back((tb - ta) / ta);
    if (ra.duration_s > 0) k.op_rel.push_back((rb.duration_s - ra.duration_s) / ra.duration_s);
    ranks[ra.rank].first.add(ra);
    ranks[ra.rank].second.add(rb);
    ++rank_ops[ra.rank];
  }
  for (const TraceRecord& rb : b) {
    all_b.add(rb);
    if (!used_b.count({rb.rank, rb.op_index})) ++c.only_b;
  }
  c.a_span_s = all_a.length();
  c.b_span_s = all_b.length();
  for (auto& [name, acc] : kinds) {
    KindError e;
    e.kind = name;
    e.ops = static_cast<int64_t>(acc.rel.size());
    const double n = std::max<double>(1, static_cast<double>(e.ops));
    e.a_mean_s = acc.a_sum / n;
    e.b_mean_s = acc.b_sum / n;
    double sum = 0, mx = 0;
    std::vector<double> abs_rel;
    for (double r : acc.rel) {
      sum += r;
      mx = std::max(mx, std::abs(r));
      abs_rel.push_back(std::abs(r));
    }
    e.mean_rel_error = acc.rel.empty() ? 0 : sum / static_cast<double>(acc.rel.size());
    e.median_abs_rel_error = median(abs_rel);
    e.max_abs_rel_error = mx;
    e.waits_excluded = acc.waits_excluded;
    std::vector<double> op_abs;
    for (double r : acc.op_rel) op_abs.push_back(std::abs(r));
    e.op_median_abs_rel_error = median(op_abs);
    c.kinds.push_back(e);
  }
  for (auto& [rank, spans] : ranks) {
    RankError e;
    e.rank = rank;
    e.ops = rank_ops[rank];
    e.a_span_s = spans.first.length();
    e.b_span_s = spans.second.length();
    e.rel_error = e.a_span_s > 0 ? (e.b_span_s - e.a_span_s) / e.a_span_s : 0;
    c.ranks.push_back(e);
  }
  return c;
}

std::string trace_source(const std::string& path) {
  std::ifstream in(path);
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  std::smatch m;
  if (std::regex_search(head, m, std::regex("\"source\"\\s*:\\s*\"([A-Za-z0-9_-]*)\""))) return m[1];
  return {};
}

schedules::CalibrationTable calibrate_from_trace(const std::vector<TraceRecord>& trace, const std::string& path,
                                                 const schedules::Schedule& schedule, const std::string& source,
                                                 const std::string& device, int64_t shape_divisor) {
  if (shape_divisor < 1)
    throw schedules::ScheduleError("calibrate: --shape-divisor " + std::to_string(shape_divisor) + " must be >= 1");
  const bool cpu = source == "cpu";
  schedules::CalibrationBuilder builder;
  const auto last = instances(trace); // a collective's time: its instance's, from the last start
  for (const TraceRecord& r : trace) {
    if (r.failed) continue;
    if (r.rank < 0 || r.rank >= schedule.world() || r.op_index >= schedule.program(r.rank).ops.size())
      throw schedules::ScheduleError("calibrate: " + path + ": event of rank " + std::to_string(r.rank) + " op " +
                                     std::to_string(r.op_index) + " is not in the schedule");
    const schedules::Op& op = schedule.program(r.rank).ops[r.op_index];
    const std::string& name = op.name < schedule.names.size() ? schedule.names[op.name] : std::string();
    if (op.kind != r.kind || name != r.name)
      throw schedules::ScheduleError("calibrate: " + path + ": rank " + std::to_string(r.rank) + " op " +
                                     std::to_string(r.op_index) + " is \"" + r.name + "\" in the trace but \"" + name +
                                     "\" in the schedule: the trace is of another schedule");
    if (!op.is_communication()) {
      const auto shape = cpu ? schedules::executed_shape(op, shape_divisor) : op.shape;
      builder.add_kernel_sample(op.kernel, cpu ? schedules::DType::FP32 : op.dtype, shape, r.duration_s, name);
    } else if (op.kind != schedules::OpKind::Recv) { // a link is counted once, at its send
      const double bytes = cpu ? schedules::executed_bytes(op.bytes, shape_divisor) : op.bytes;
      const int64_t group = op.kind == schedules::OpKind::Send ? 2 : schedule.layout.group_size(op.group);
      builder.add_comm_sample(op.kind, group, bytes, op_time(r, last));
    }
  }
  schedules::CalibrationTable table = builder.build(source, device);
  table.shape_divisor = cpu ? shape_divisor : 1;
  return table;
}

} // namespace twinscale::diagnose
