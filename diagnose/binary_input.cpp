// RunData from a binary trace (`.tstrace`), the reading of from_trace without holding
// the events: what from_trace derives per op (step, phase, occurrence on its stream, the
// program signature) is a function of the program, computed once per program; each rank
// block is then read, summed and reduced, by two threads over halves of the ranks.
#include <algorithm>
#include <exception>
#include <functional>
#include <map>
#include <thread>

#include "diagnose/error.hpp"
#include "diagnose/run_data.hpp"
#include "schedules/error.hpp"

namespace twinscale::diagnose {

namespace {

using schedules::Stream;

/// Per op of one stored program: what from_trace computes of it.
struct ProgramTable {
  std::vector<int32_t> step;       // max(0, iteration)
  std::vector<int8_t> bucket;      // compute stream: 0 forward, 1 backward/recompute, 2 other; −1 otherwise
  std::vector<int64_t> occurrence; // index among the ops of its (step, stream)
  std::vector<size_t> name_hash;   // std::hash of its name (the peer signature)
  size_t signature = 0;            // over every op (a rank that traced them all)
  int32_t steps = 0;
};

size_t fold(size_t h, size_t name_hash, const schedules::Op& op) {
  return h * 1000003u ^ name_hash ^ (static_cast<size_t>(op.kind) << 8) ^ static_cast<size_t>(op.stream);
}

ProgramTable table_of(const schedules::Program& p, const std::vector<std::string>& names) {
  using schedules::Phase;
  ProgramTable t;
  const size_t n = p.ops.size();
  t.step.resize(n);
  t.bucket.assign(n, -1);
  t.occurrence.assign(n, 0);
  t.name_hash.resize(n);
  std::map<std::pair<int32_t, int>, int64_t> count; // (step, stream)
  for (size_t i = 0; i < n; ++i) {
    const schedules::Op& op = p.ops[i];
    t.step[i] = std::max(0, op.labels.iteration);
    t.steps = std::max(t.steps, op.labels.iteration + 1);
    t.name_hash[i] = std::hash<std::string>{}(names[op.name]);
    t.signature = fold(t.signature, t.name_hash[i], op);
    if (op.stream == Stream::Compute)
      t.bucket[i] = op.labels.phase == Phase::Forward                                           ? 0
                    : op.labels.phase == Phase::Backward || op.labels.phase == Phase::Recompute ? 1
                                                                                                : 2;
    else if (op.stream != Stream::Data)
      t.occurrence[i] = count[{t.step[i], static_cast<int>(op.stream)}]++;
  }
  return t;
}

/// What one thread makes of ranks [begin, end).
struct Part {
  std::vector<std::vector<int64_t>> ns; // [rank − begin][step·3 + phase] compute ns
  std::vector<size_t> signature;        // [rank − begin]
  std::vector<bool> traced;             // [rank − begin]: has events
  int32_t steps = 0;
  CommReducer comms;
  std::exception_ptr error;
  Part(const std::optional<schedules::Layout>& layout, int64_t world) : comms(layout, world) {}
};

void read_part(const schedules::BinaryTraceReader& reader, const std::vector<ProgramTable>& tables, int64_t begin,
               int64_t end, Part& part) {
  std::vector<schedules::BinaryTraceEvent> events;
  std::vector<uint32_t> order;
  part.ns.resize(static_cast<size_t>(end - begin));
  part.signature.assign(static_cast<size_t>(end - begin), 0);
  part.traced.assign(static_cast<size_t>(end - begin), false);
  for (int64_t rank = begin; rank < end; ++rank) {
    reader.read_rank(rank, events);
    if (events.empty()) continue;
    const uint32_t pid = reader.program_of(rank);
    const schedules::Program& prog = reader.programs()[pid];
    const ProgramTable& t = tables[pid];
    const size_t k = static_cast<size_t>(rank - begin);
    part.traced[k] = true;
    auto& ns = part.ns[k];
    int32_t steps = 0;
    for (const auto& e : events) steps = std::max(steps, prog.ops[e.op_index].labels.iteration + 1);
    part.steps = std::max(part.steps, steps);
    ns.assign(static_cast<size_t>(std::max(steps, 1)) * 3, 0);
    for (const auto& e : events) {
      const schedules::Op& op = prog.ops[e.op_index];
      const int32_t step = t.step[e.op_index];
      if (t.bucket[e.op_index] >= 0) {
        ns[static_cast<size_t>(step) * 3 + static_cast<size_t>(t.bucket[e.op_index])] += e.duration_ns;
      } else if (op.stream != Stream::Data) {
        const double start = static_cast<double>(e.start_ns) * 1e-9;
        part.comms.add(rank, step, op.stream, e.op_index, t.occurrence[e.op_index], start,
                       static_cast<double>(e.start_ns + e.duration_ns) * 1e-9, e.failed, op.name);
      }
    }
    if (events.size() == prog.ops.size()) {
      part.signature[k] = t.signature;
    } else { // a rank that did not run every op: the signature of the ops it traced
      order.clear();
      for (const auto& e : events) order.push_back(e.op_index);
      std::sort(order.begin(), order.end());
      size_t h = 0;
      for (uint32_t i : order) h = fold(h, t.name_hash[i], prog.ops[i]);
      part.signature[k] = h;
    }
  }
}

} // namespace

RunData from_binary_trace(const schedules::BinaryTraceReader& reader, int64_t gpus_per_host,
                          const std::optional<schedules::Layout>& layout_option, int threads) {
  RunData d;
  d.source = reader.path();
  d.binary_trace = reader.path();
  d.phases = {"forward", "backward", "optimizer"};
  d.own_time = {true, true, true};
  if (reader.events() == 0) throw DiagnoseError(reader.path() + ": the trace has no events");
  int64_t world = 0; // as from_trace: up to the last rank with events
  for (int64_t r = 0; r < reader.world(); ++r)
    if (reader.event_count(r) > 0) world = r + 1;
  const std::optional<schedules::Layout> layout = layout_option ? layout_option : reader.layout();
  std::vector<ProgramTable> tables;
  for (const auto& p : reader.programs()) tables.push_back(table_of(p, reader.names()));

  // Halves split at a TP-group boundary (the reducer closes a group's instances there).
  const int64_t tp = layout && layout->world() == world ? layout->tp : 1;
  const int64_t n = std::clamp<int64_t>(threads, 1, 16);
  std::vector<int64_t> bounds{0};
  for (int64_t i = 1; i < n; ++i) bounds.push_back(std::max(bounds.back(), world * i / n / tp * tp));
  bounds.push_back(world);
  std::vector<Part> parts;
  for (int64_t i = 0; i < n; ++i) parts.emplace_back(layout, world);
  std::vector<std::thread> pool;
  for (int64_t i = 0; i < n; ++i)
    pool.emplace_back([&, i] {
      try {
        read_part(reader, tables, bounds[static_cast<size_t>(i)], bounds[static_cast<size_t>(i) + 1],
                  parts[static_cast<size_t>(i)]);
        parts[static_cast<size_t>(i)].comms.seal();
      } catch (...) {
        parts[static_cast<size_t>(i)].error = std::current_exception();
      }
    });
  for (auto& t : pool) t.join();
  for (const Part& p : parts)
    if (p.error) std::rethrow_exception(p.error);

  int32_t steps = 0;
  for (const Part& p : parts) steps = std::max(steps, p.steps);
  d.ranks.resize(static_cast<size_t>(world));
  std::map<size_t, int64_t> group_of_signature;
  for (size_t i = 0; i < parts.size(); ++i) {
    const Part& p = parts[i];
    for (int64_t rank = bounds[i]; rank < bounds[i + 1]; ++rank) {
      const size_t k = static_cast<size_t>(rank - bounds[i]);
      RankSeries& s = d.ranks[static_cast<size_t>(rank)];
      s.rank = rank;
      s.step_phase_s.assign(static_cast<size_t>(steps), std::vector<double>(3, 0.0));
      for (size_t j = 0; j < p.ns[k].size(); ++j) s.step_phase_s[j / 3][j % 3] = static_cast<double>(p.ns[k][j]) * 1e-9;
      const auto [it, fresh] =
          group_of_signature.try_emplace(p.signature[k], static_cast<int64_t>(group_of_signature.size()));
      s.peer_group = it->second;
    }
  }
  group_hosts(d, gpus_per_host);
  if (!reader.hosts().empty()) set_hosts(d, reader.hosts());
  d.layout = layout;
  for (size_t i = 1; i < parts.size(); ++i) parts[0].comms.merge(std::move(parts[i].comms));
  d.comm_summary = parts[0].comms.finish(reader.names(), steps);
  return d;
}

} // namespace twinscale::diagnose
