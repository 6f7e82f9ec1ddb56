// `twinscale trace convert IN.tstrace OUT.json [--ranks 0-7,100]`: a Chrome trace of
// chosen ranks of a binary trace (for Perfetto / chrome://tracing), the same bytes
// `simulate --trace OUT.json` writes for them up to nanosecond rounding.
// `twinscale trace info IN.tstrace`: what the file holds.
#include <cstdio>
#include <iostream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/job_args.hpp"
#include "cli/layout_notation.hpp"
#include "config/error.hpp"
#include "schedules/binary_trace.hpp"
#include "schedules/output_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/trace.hpp"

namespace twinscale::cli {

namespace {

struct ConvertArgs {
  std::string in, out, ranks;
};

int convert(const ConvertArgs& a) {
  schedules::check_distinct_files({{"IN", a.in}}, {{"OUT", a.out}});
  if (schedules::is_binary_trace_path(a.out))
    throw config::ConfigError("trace convert: " + a.out + " is a .tstrace; the output is a Chrome trace (.json)");
  const schedules::BinaryTraceReader reader(a.in);
  std::vector<int64_t> ranks;
  if (a.ranks.empty()) {
    for (int64_t r = 0; r < reader.world(); ++r) ranks.push_back(r);
  } else {
    ranks = parse_ranks(a.ranks, reader.world());
  }
  uint64_t events = 0;
  for (int64_t r : ranks) events += reader.event_count(r);
  // ~300 bytes of JSON an event: the JSON reader's 1 GiB cap holds ~3 M events.
  if (a.ranks.empty() && events > 3'000'000)
    throw config::ConfigError("trace convert: " + a.in + " holds " + std::to_string(events) + " events of " +
                              std::to_string(reader.world()) +
                              " ranks, too many for one Chrome trace (≈ 300 bytes an event); choose ranks with "
                              "--ranks, e.g. --ranks 0-7");
  schedules::Trace trace;
  trace.source = reader.source();
  trace.hosts = reader.hosts();
  std::vector<schedules::BinaryTraceEvent> evs;
  for (int64_t r : ranks) {
    reader.read_rank(r, evs);
    for (const auto& e : evs)
      trace.events.push_back(schedules::TraceEvent{r, e.op_index, static_cast<double>(e.start_ns) * 1e-9,
                                                   static_cast<double>(e.start_ns + e.duration_ns) * 1e-9, e.failed});
  }
  std::ostringstream text;
  schedules::write_chrome_trace(trace, reader.schedule(), text);
  write_file_atomically(a.out, text.str());
  std::fprintf(stderr, "twinscale trace convert: %zu events of %zu rank(s) written to %s\n", trace.events.size(),
               ranks.size(), a.out.c_str());
  return 0;
}

struct InfoArgs {
  std::string in;
  bool json = false;
};

/// The hosts a trace names, each once, in the order of their first rank.
std::vector<std::string> distinct_hosts(const std::vector<std::string>& hosts) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& h : hosts)
    if (!h.empty() && seen.insert(h).second) out.push_back(h);
  return out;
}

/// "2 (server0 … server1)", or that the file names none.
std::string hosts_text(const std::vector<std::string>& hosts) {
  if (hosts.empty()) return "not recorded (a version 1 trace)";
  return std::to_string(hosts.size()) + " (" + hosts.front() + (hosts.size() > 1 ? " … " + hosts.back() : "") + ")";
}

int info(const InfoArgs& a) {
  const std::string& in = a.in;
  const schedules::BinaryTraceReader r(in);
  const schedules::Layout& L = r.layout();
  uint64_t ops = 0;
  for (const auto& p : r.programs()) ops += p.ops.size();
  int64_t traced = 0;
  for (int64_t rank = 0; rank < r.world(); ++rank) traced += r.event_count(rank) > 0 ? 1 : 0;
  if (a.json) {
    nlohmann::json j;
    j["file"] = in;
    j["source"] = r.source();
    j["version"] = r.version();
    j["event_schema"] = schedules::kBinaryTraceSchema;
    j["bytes"] = r.file_bytes();
    j["ranks"] = r.world();
    const int64_t cp = L.cp > 0 ? L.cp : 1; // Megatron's names and order; the layout's dp counts dp·cp
    j["layout"] = {{"tp", L.tp}, {"cp", cp}, {"ep", L.ep}, {"dp", L.dp / cp}, {"pp", L.pp}};
    j["ranks_with_events"] = traced;
    j["programs"] = r.programs().size();
    j["ops"] = ops;
    j["events"] = r.events();
    j["hosts"] = distinct_hosts(r.hosts()); // each once, in rank order; [] when not recorded
    j["host_of_rank"] = r.hosts();          // index = rank ("" unknown); [] when not recorded
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::printf("file        %s\nsource      %s\nversion     %u (event schema %u)\nbytes       %llu\n"
              "ranks       %lld (%s), %lld with events\nprograms    %zu (%llu ops)\n"
              "events      %llu (%.2f bytes an event)\nhosts       %s\n",
              in.c_str(), r.source().c_str(), r.version(), schedules::kBinaryTraceSchema,
              static_cast<unsigned long long>(r.file_bytes()), static_cast<long long>(r.world()),
              layout_text(L).c_str(), static_cast<long long>(traced), r.programs().size(),
              static_cast<unsigned long long>(ops), static_cast<unsigned long long>(r.events()),
              r.events() ? static_cast<double>(r.file_bytes()) / static_cast<double>(r.events()) : 0.0,
              hosts_text(distinct_hosts(r.hosts())).c_str());
  return 0;
}

} // namespace

void add_trace_command(CLI::App& app, Action& action) {
  CLI::App* cmd = app.add_subcommand("trace", "binary traces (.tstrace): convert chosen ranks to Chrome JSON, info");
  cmd->require_subcommand(1);
  auto conv = std::make_shared<ConvertArgs>();
  CLI::App* c = cmd->add_subcommand("convert", "a Chrome trace (Perfetto) of chosen ranks of a .tstrace");
  c->add_option("in", conv->in, "the binary trace (simulate --trace FILE.tstrace)")->required();
  c->add_option("out", conv->out, "the Chrome trace to write (.json)")->required();
  c->add_option("--ranks", conv->ranks, "ranks to convert, e.g. 0-7,100 (default: every rank, if it fits)");
  c->callback([conv, &action] { action = [conv] { return convert(*conv); }; });
  auto in = std::make_shared<InfoArgs>();
  CLI::App* i = cmd->add_subcommand("info", "what a .tstrace holds: ranks, layout, programs, events, bytes");
  i->add_option("in", in->in, "the binary trace")->required();
  i->add_flag("--json", in->json, "JSON instead of the text");
  i->callback([in, &action] { action = [in] { return info(*in); }; });
}

} // namespace twinscale::cli
