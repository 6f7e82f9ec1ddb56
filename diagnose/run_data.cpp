#include "diagnose/run_data.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "diagnose/error.hpp"

namespace twinscale::diagnose {

namespace {

std::vector<std::string> split(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(line);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  if (!line.empty() && line.back() == sep) out.emplace_back();
  return out;
}

/// Calls `row(where, columns)` for every data line of a CSV text: the first line must be
/// `header`; blank lines are skipped, CRLF accepted; `where` is "source:line". Returns the
/// number of lines read (0: empty text).
template <class Row>
int64_t for_each_csv_row(const std::string& text, const std::string& source, const std::string& header, size_t columns,
                         Row&& row) {
  std::istringstream in(text);
  std::string line;
  int64_t line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::string where = source + ":" + std::to_string(line_no);
    if (line_no == 1) {
      if (line != header) throw DiagnoseError(where + ": expected the header \"" + header + "\", got \"" + line + "\"");
      continue;
    }
    const auto cols = split(line, ',');
    if (cols.size() != columns)
      throw DiagnoseError(where + ": expected " + std::to_string(columns) + " columns, got " +
                          std::to_string(cols.size()));
    row(where, cols);
  }
  return line_no;
}

int64_t parse_int(const std::string& s, const std::string& where) {
  int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || v < 0)
    throw DiagnoseError(where + ": \"" + s + "\" is not a non-negative integer");
  return v;
}

double parse_seconds(const std::string& s, const std::string& where) {
  double v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0)
    throw DiagnoseError(where + ": \"" + s + "\" is not a finite number of seconds ≥ 0");
  return v;
}

constexpr const char* kCsvHeader = "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s";

} // namespace

void group_hosts(RunData& d, int64_t gpus_per_host) {
  if (gpus_per_host <= 0) throw DiagnoseError("--gpus-per-host must be ≥ 1, got " + std::to_string(gpus_per_host));
  for (RankSeries& r : d.ranks) {
    r.host = r.rank / gpus_per_host;
    while (static_cast<int64_t>(d.hosts.size()) <= r.host) d.hosts.push_back("host" + std::to_string(d.hosts.size()));
  }
}

RunData read_per_rank_csv(const std::string& text, const std::string& source, int64_t gpus_per_host) {
  RunData d;
  d.source = source;
  d.phases = {"forward", "backward", "comm_wait"};
  d.own_time = {true, true, false};
  std::map<int64_t, int64_t> stage_of_rank;
  schedules::Layout layout{0, 0, 0};
  for_each_csv_row(text, source, kCsvHeader, 7, [&](const std::string& where, const std::vector<std::string>& cols) {
    RankSeries r;
    r.rank = parse_int(cols[0], where + " column rank");
    const int64_t tp = parse_int(cols[1], where + " column tp"), pp = parse_int(cols[2], where + " column pp"),
                  dp = parse_int(cols[3], where + " column dp");
    if (r.rank != static_cast<int64_t>(d.ranks.size()))
      throw DiagnoseError(where + ": rank " + std::to_string(r.rank) + " out of order; expected rank " +
                          std::to_string(d.ranks.size()) + " (one line per rank, in rank order)");
    r.peer_group = pp;
    r.step_phase_s.push_back({parse_seconds(cols[4], where + " column forward_s"),
                              parse_seconds(cols[5], where + " column backward_s"),
                              parse_seconds(cols[6], where + " column comm_wait_s")});
    layout.tp = std::max(layout.tp, tp + 1);
    layout.pp = std::max(layout.pp, pp + 1);
    layout.dp = std::max(layout.dp, dp + 1);
    d.ranks.push_back(std::move(r));
  });
  if (d.ranks.empty()) throw DiagnoseError(source + ": no rank lines after the header (" + kCsvHeader + ")");
  if (layout.world() == static_cast<int64_t>(d.ranks.size())) d.layout = layout;
  group_hosts(d, gpus_per_host);
  return d;
}

RunData from_trace(const std::vector<schedules::TraceRecord>& records, const std::string& source, int64_t gpus_per_host,
                   const std::vector<std::string>& hosts) {
  using schedules::Phase;
  RunData d;
  d.source = source;
  d.phases = {"forward", "backward", "optimizer"};
  d.own_time = {true, true, true};
  if (records.empty()) throw DiagnoseError(source + ": the trace has no events");
  int64_t world = 0;
  int32_t steps = 0;
  for (const auto& r : records) {
    world = std::max(world, r.rank + 1);
    steps = std::max(steps, r.labels.iteration + 1);
  }
  // Records sorted by (rank, op index): the program order of each rank.
  std::vector<const schedules::TraceRecord*> sorted;
  sorted.reserve(records.size());
  for (const auto& r : records) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(),
            [](auto* a, auto* b) { return a->rank != b->rank ? a->rank < b->rank : a->op_index < b->op_index; });
  d.ranks.resize(static_cast<size_t>(world));
  std::vector<size_t> signature(static_cast<size_t>(world), 0);
  std::map<std::tuple<int64_t, int32_t, int>, int64_t> occurrence; // (rank, step, stream)
  for (const auto* r : sorted) {
    RankSeries& s = d.ranks[static_cast<size_t>(r->rank)];
    if (s.step_phase_s.empty()) s.step_phase_s.assign(static_cast<size_t>(steps), std::vector<double>(3, 0.0));
    const int32_t step = std::max(0, r->labels.iteration);
    size_t& h = signature[static_cast<size_t>(r->rank)];
    h = h * 1000003u ^ std::hash<std::string>{}(r->name) ^ (static_cast<size_t>(r->kind) << 8) ^
        static_cast<size_t>(r->stream);
    if (r->stream == schedules::Stream::Compute) {
      const int phase = r->labels.phase == Phase::Forward                                           ? 0
                        : r->labels.phase == Phase::Backward || r->labels.phase == Phase::Recompute ? 1
                                                                                                    : 2;
      s.step_phase_s[static_cast<size_t>(step)][static_cast<size_t>(phase)] += r->duration_s;
    } else if (r->stream != schedules::Stream::Data) {
      CommEvent c;
      c.rank = r->rank;
      c.step = step;
      c.op_index = r->op_index;
      c.stream = r->stream;
      c.kind = r->kind;
      c.name = r->name;
      c.occurrence = occurrence[{r->rank, step, static_cast<int>(r->stream)}]++;
      c.start_s = r->start_s;
      c.end_s = r->start_s + r->duration_s;
      c.failed = r->failed;
      d.comms.push_back(std::move(c));
    }
  }
  std::map<size_t, int64_t> group_of_signature;
  for (int64_t rank = 0; rank < world; ++rank) {
    RankSeries& s = d.ranks[static_cast<size_t>(rank)];
    s.rank = rank;
    if (s.step_phase_s.empty()) s.step_phase_s.assign(static_cast<size_t>(steps), std::vector<double>(3, 0.0));
    const auto [it, fresh] = group_of_signature.try_emplace(signature[static_cast<size_t>(rank)],
                                                            static_cast<int64_t>(group_of_signature.size()));
    s.peer_group = it->second;
  }
  group_hosts(d, gpus_per_host);
  if (!hosts.empty()) set_hosts(d, hosts);
  d.records = records;
  return d;
}

void append_steps(RunData& into, const RunData& more) {
  if (more.ranks.size() != into.ranks.size() || more.phases != into.phases)
    throw DiagnoseError(more.source + ": not another step of " + into.source + " (" +
                        std::to_string(more.ranks.size()) + " ranks vs " + std::to_string(into.ranks.size()) +
                        ", or other phases)");
  for (size_t i = 0; i < into.ranks.size(); ++i) {
    if (more.ranks[i].peer_group != into.ranks[i].peer_group)
      throw DiagnoseError(more.source + ": rank " + std::to_string(i) + " runs another program than in " + into.source);
    auto& steps = into.ranks[i].step_phase_s;
    steps.insert(steps.end(), more.ranks[i].step_phase_s.begin(), more.ranks[i].step_phase_s.end());
  }
  const int32_t offset = static_cast<int32_t>(into.steps() - more.steps());
  for (CommEvent c : more.comms) {
    c.step += offset;
    into.comms.push_back(std::move(c));
  }
  if (into.comm_summary.present || more.comm_summary.present) {
    if (!into.comms.empty())
      throw DiagnoseError(more.source + ": Chrome and binary traces of one job cannot be combined; convert one "
                                        "(twinscale trace convert)");
    CommSummary& a = into.comm_summary;
    const CommSummary& b = more.comm_summary;
    a.present = a.present || b.present;
    a.steps.resize(into.ranks.size());
    for (size_t r = 0; r < a.steps.size(); ++r) {
      a.steps[r].resize(static_cast<size_t>(offset));
      if (r < b.steps.size()) a.steps[r].insert(a.steps[r].end(), b.steps[r].begin(), b.steps[r].end());
    }
    const auto names = static_cast<uint32_t>(a.names.size());
    a.names.insert(a.names.end(), b.names.begin(), b.names.end());
    for (CollectiveTime c : b.collectives) {
      c.step += offset;
      c.name += names;
      a.collectives.push_back(c);
    }
    std::sort(a.collectives.begin(), a.collectives.end(), instance_order);
  }
  into.source += " + " + more.source;
}

std::vector<LinkUse> read_link_csv(const std::string& text, const std::string& source) {
  static const std::string header = "link,name,direction,kind,bytes,busy_s,busy_fraction,rate_fraction";
  std::vector<LinkUse> out;
  const int64_t lines =
      for_each_csv_row(text, source, header, 8, [&](const std::string& where, const std::vector<std::string>& c) {
        parse_int(c[0], where + " column link");
        if (c[2] != "up" && c[2] != "down")
          throw DiagnoseError(where + " column direction: \"" + c[2] + "\" (valid: up, down)");
        LinkUse u{c[1],
                  c[2],
                  c[3],
                  parse_seconds(c[4], where + " column bytes"),
                  parse_seconds(c[5], where + " column busy_s"),
                  parse_seconds(c[6], where + " column busy_fraction"),
                  parse_seconds(c[7], where + " column rate_fraction")};
        out.push_back(std::move(u));
      });
  if (lines == 0) throw DiagnoseError(source + ": empty (expected the header \"" + header + "\")");
  return out;
}

void set_hosts(RunData& d, const std::vector<std::string>& host_of_rank) {
  const std::vector<std::string> before = std::move(d.hosts);
  d.hosts.clear();
  std::map<std::string, int64_t> index;
  for (RankSeries& r : d.ranks) {
    const bool named =
        r.rank < static_cast<int64_t>(host_of_rank.size()) && !host_of_rank[static_cast<size_t>(r.rank)].empty();
    const bool had = r.host >= 0 && r.host < static_cast<int64_t>(before.size());
    if (!named && !had) {
      r.host = -1;
      continue;
    }
    const std::string& h = named ? host_of_rank[static_cast<size_t>(r.rank)] : before[static_cast<size_t>(r.host)];
    const auto [it, fresh] = index.try_emplace(h, static_cast<int64_t>(d.hosts.size()));
    if (fresh) d.hosts.push_back(h);
    r.host = it->second;
  }
}

} // namespace twinscale::diagnose
