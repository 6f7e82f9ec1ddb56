// diagnose/: stragglers, slow hosts, jitter, hangs and late launchers found in small
// hand-made runs whose culprits are known; and clear errors for unreadable input.
#include <cstdio>
#include <string>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "diagnose/diagnosis.hpp"
#include "diagnose/error.hpp"
#include "diagnose/hang_report.hpp"
#include "records/rank_state.hpp"

using namespace twinscale;
using diagnose::FindingKind;

namespace {

/// A rank waiting on op `index` of its ordered channel, for peers that never arrived.
diagnose::Wait wait_of(int64_t rank, uint32_t index, const char* name, const char* channel, int64_t sequence,
                       double waiting_s, std::vector<int64_t> not_arrived) {
  records::WaitingOp op;
  op.op_index = index;
  op.name = name;
  op.channel = channel;
  op.sequence = sequence;
  op.waiting_s = waiting_s;
  return diagnose::Wait{rank, op, std::move(not_arrived)};
}

/// A per-rank CSV of a tp2·pp2·dp16 job (64 ranks): forward 1 s and backward 2 s per rank
/// times `slow(rank)`; the waits grow on the others (as a straggler's peers wait).
template <class F>
std::string csv(F slow) {
  std::string t = "rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n";
  char line[200];
  for (int r = 0; r < 64; ++r) {
    const double f = slow(r);
    std::snprintf(line, sizeof line, "%d,%d,%d,%d,%.9f,%.9f,%.9f\n", r, r % 2, r / 32, (r / 2) % 16, 1.0 * f, 2.0 * f,
                  f > 1 ? 0.1 : 0.1 + 0.05 * (r % 3));
    t += line;
  }
  return t;
}

std::vector<const diagnose::Finding*> of_kind(const diagnose::Diagnosis& d, FindingKind k) {
  std::vector<const diagnose::Finding*> v;
  for (const auto& f : d.findings)
    if (f.kind == k) v.push_back(&f);
  return v;
}

} // namespace

TEST_CASE("diagnose: a uniform run has no findings") {
  const auto data = diagnose::read_per_rank_csv(csv([](int) { return 1.0; }), "u.csv", 8);
  REQUIRE(data.layout);
  CHECK(data.layout->tp == 2);
  CHECK(data.layout->pp == 2);
  CHECK(data.layout->dp == 16);
  const auto d = diagnose::diagnose_run(data);
  CHECK(d.findings.empty());
  CHECK(d.ranks == 64);
}

TEST_CASE("diagnose: a rank 5 % slower is the one straggler, 2 % is below the threshold") {
  const auto d =
      diagnose::diagnose_run(diagnose::read_per_rank_csv(csv([](int r) { return r == 37 ? 1.05 : 1.0; }), "s.csv", 8));
  REQUIRE(d.findings.size() == 1);
  CHECK(d.findings[0].kind == FindingKind::Straggler);
  CHECK(d.findings[0].ranks == std::vector<int64_t>{37});
  CHECK(d.findings[0].host == "host4");
  CHECK(d.findings[0].excess == Approx(0.05).epsilon(1e-6));
  CHECK(d.findings[0].detected_after_steps == 1);
  CHECK(d.scores[37].excess == Approx(0.05).epsilon(1e-6));
  CHECK(d.scores[36].excess == Approx(0.0).margin(1e-12));
  const auto small =
      diagnose::diagnose_run(diagnose::read_per_rank_csv(csv([](int r) { return r == 37 ? 1.02 : 1.0; }), "s.csv", 8));
  CHECK(small.findings.empty());
}

TEST_CASE("diagnose: natural spread of the peers raises the bar (robust z over the MAD)") {
  // Peers spread ±3 %: a rank 5 % slower is within 4 MADs and is not named; 15 % is.
  auto spread = [](int r) { return 1.0 + 0.03 * ((r * 7) % 5 - 2) / 2.0; };
  const auto d5 = diagnose::diagnose_run(
      diagnose::read_per_rank_csv(csv([&](int r) { return r == 9 ? 1.05 : spread(r); }), "n.csv", 8));
  CHECK(of_kind(d5, FindingKind::Straggler).empty());
  const auto d15 = diagnose::diagnose_run(
      diagnose::read_per_rank_csv(csv([&](int r) { return r == 9 ? 1.15 : spread(r); }), "n.csv", 8));
  REQUIRE(of_kind(d15, FindingKind::Straggler).size() == 1);
  CHECK(of_kind(d15, FindingKind::Straggler)[0]->ranks[0] == 9);
}

TEST_CASE("diagnose: a slow host is named when most of its ranks straggle") {
  const auto d = diagnose::diagnose_run(
      diagnose::read_per_rank_csv(csv([](int r) { return r / 8 == 2 ? 1.1 : 1.0; }), "h.csv", 8));
  const auto hosts = of_kind(d, FindingKind::SlowHost);
  REQUIRE(hosts.size() == 1);
  CHECK(hosts[0]->host == "host2");
  CHECK(hosts[0]->ranks.size() == 8);
  CHECK(of_kind(d, FindingKind::Straggler).size() == 8);
}

TEST_CASE("diagnose: per-rank CSV errors name the file, line and column") {
  CHECK_THROWS_WITH(diagnose::read_per_rank_csv("rank,x\n", "a.csv", 8),
                    Catch::Contains("a.csv:1") && Catch::Contains("expected the header"));
  CHECK_THROWS_WITH(
      diagnose::read_per_rank_csv("rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n0,0,0,0,1,nan,0\n", "b.csv", 8),
      Catch::Contains("b.csv:2 column backward_s"));
  CHECK_THROWS_WITH(
      diagnose::read_per_rank_csv("rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n1,0,0,0,1,1,0\n", "c.csv", 8),
      Catch::Contains("expected rank 0"));
  CHECK_THROWS_AS(diagnose::read_per_rank_csv("rank,tp,pp,dp,forward_s,backward_s,comm_wait_s\n", "d.csv", 8),
                  diagnose::DiagnoseError);
  CHECK_THROWS_WITH(diagnose::read_per_rank_csv(csv([](int) { return 1.0; }), "e.csv", 0),
                    Catch::Contains("--gpus-per-host"));
}

namespace {

/// A trace of 16 ranks with one program, `steps` steps: per step a forward GEMM (1 ms ×
/// slow(rank, step)) then a dp all-reduce launched when the GEMM ends.
template <class F>
std::vector<schedules::TraceRecord> trace(int steps, F slow) {
  std::vector<schedules::TraceRecord> v;
  for (int r = 0; r < 16; ++r)
    for (int s = 0; s < steps; ++s) {
      const double t0 = 0.01 * s, dur = 1e-3 * slow(r, s);
      schedules::TraceRecord g;
      g.rank = r;
      g.op_index = 2 * s;
      g.name = "mlp.fc1";
      g.labels.iteration = s;
      g.start_s = t0;
      g.duration_s = dur;
      v.push_back(g);
      schedules::TraceRecord c;
      c.rank = r;
      c.op_index = 2 * s + 1;
      c.stream = schedules::Stream::DpComm;
      c.kind = schedules::OpKind::AllReduce;
      c.name = "grads.allreduce";
      c.labels.iteration = s;
      c.labels.phase = schedules::Phase::Backward;
      c.start_s = t0 + dur;
      c.duration_s = 2e-3;
      v.push_back(c);
    }
  return v;
}

} // namespace

TEST_CASE("diagnose: from a trace, a straggler is also the late launcher of the step's last collective") {
  const auto data = diagnose::from_trace(trace(4, [](int r, int) { return r == 6 ? 1.3 : 1.0; }), "t.json", 8);
  CHECK(data.steps() == 4);
  const auto d = diagnose::diagnose_run(data);
  REQUIRE(of_kind(d, FindingKind::Straggler).size() == 1);
  CHECK(of_kind(d, FindingKind::Straggler)[0]->ranks[0] == 6);
  const auto late = of_kind(d, FindingKind::LateLauncher);
  REQUIRE(late.size() == 1);
  CHECK(late[0]->ranks[0] == 6);
  CHECK(late[0]->score == 4); // late in every step
  CHECK(d.scores[6].late_launches == 4);
}

TEST_CASE("diagnose: slow on one step of eight is jitter, not a straggler") {
  const auto d = diagnose::diagnose_run(
      diagnose::from_trace(trace(8, [](int r, int s) { return r == 11 && s == 5 ? 1.5 : 1.0; }), "j.json", 8));
  CHECK(of_kind(d, FindingKind::Straggler).empty());
  const auto j = of_kind(d, FindingKind::Jitter);
  REQUIRE(j.size() == 1);
  CHECK(j[0]->ranks[0] == 11);
  CHECK(j[0]->score == 1);
}

TEST_CASE("diagnose: a hang names the silent rank everyone waits on, and the op they are stuck in") {
  diagnose::RunData data;
  data.source = "run";
  for (int r = 0; r < 4; ++r) data.ranks.push_back(diagnose::RankSeries{r, 0, -1, {}});
  data.hang.present = true;
  data.hang.world = 4;
  data.hang.silent = {2};
  data.hang.incomplete = {0, 1, 3};
  records::WaitingOp op;
  op.op_index = 7;
  op.name = "grads.allreduce";
  op.kind = schedules::OpKind::AllReduce;
  op.group = schedules::GroupKind::Dp;
  op.channel = "dp";
  op.sequence = 3;
  op.peers = {0, 1, 2, 3};
  op.waiting_s = 2.5;
  for (int r : {0, 1, 3}) data.hang.waits.push_back(diagnose::Wait{r, op, {2}});
  const auto d = diagnose::diagnose_run(data);
  REQUIRE(!d.findings.empty());
  CHECK(d.findings[0].kind == FindingKind::Hang);
  CHECK(d.findings[0].ranks == std::vector<int64_t>{2});
  CHECK(d.findings[0].score == 3);
  CHECK_THAT(d.findings[0].detail,
             Catch::Contains("grads.allreduce (all_reduce on dp #3) ×3") && Catch::Contains("[0,1,3]"));
  CHECK_THAT(diagnose::to_json(d), Catch::Contains("\"hang\""));
  CHECK_THAT(diagnose::format_table(d), Catch::Contains("hang"));
}

TEST_CASE("diagnose: one hang is one finding, with the ranks blocked behind it through chains of waits") {
  // rank 2 silent; 0 and 1 wait on it; 3 waits on 0 and 4 on 3 (a pipeline behind a group):
  // one finding naming 2, with 0, 1, 3, 4 under it (before: one finding per waited-on rank)
  diagnose::RunData data;
  data.source = "run";
  for (int r = 0; r < 6; ++r) data.ranks.push_back(diagnose::RankSeries{r, 0, -1, {}});
  data.hang.present = true;
  data.hang.world = 6;
  data.hang.silent = {2};
  data.hang.incomplete = {0, 1, 3, 4};
  data.hang.waits.push_back(wait_of(0, 7, "grads.allreduce", "dp", 3, 2.5, {2}));
  data.hang.waits.push_back(wait_of(1, 7, "grads.allreduce", "dp", 3, 2.5, {2}));
  data.hang.waits.push_back(wait_of(3, 9, "pp.recv", "pp", 1, 2.5, {0}));
  data.hang.waits.push_back(wait_of(4, 9, "pp.recv", "pp", 1, 2.5, {3}));
  const auto d = diagnose::diagnose_run(data);
  REQUIRE(of_kind(d, FindingKind::Hang).size() == 1);
  const diagnose::Finding& f = d.findings[0];
  CHECK(f.ranks == std::vector<int64_t>{2});
  CHECK(f.blocked == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(f.score == 4);
  CHECK_THAT(f.detail, Catch::Contains("2 rank(s) wait on it [0,1]") && Catch::Contains("4 rank(s) blocked behind it "
                                                                                        "in all: 0-1,3-4"));
  CHECK(nlohmann::json::parse(diagnose::to_json(d))["findings"][0]["blocked_ranks"] ==
        nlohmann::json::array({0, 1, 3, 4}));
}

TEST_CASE("diagnose: ranks that wait on each other in a cycle are one deadlock finding") {
  diagnose::RunData data;
  data.source = "run";
  for (int r = 0; r < 3; ++r) data.ranks.push_back(diagnose::RankSeries{r, 0, -1, {}});
  data.hang.present = true;
  data.hang.world = 3;
  data.hang.incomplete = {0, 1, 2};
  data.hang.waits.push_back(wait_of(0, 1, "a", "pp", 0, 1.0, {1}));
  data.hang.waits.push_back(wait_of(1, 1, "b", "pp", 0, 1.0, {0}));
  data.hang.waits.push_back(wait_of(2, 1, "c", "pp", 0, 1.0, {1}));
  const auto d = diagnose::diagnose_run(data);
  REQUIRE(of_kind(d, FindingKind::Hang).size() == 1);
  CHECK(d.findings[0].ranks == std::vector<int64_t>{0, 1});
  CHECK(d.findings[0].blocked == std::vector<int64_t>{2});
  CHECK_THAT(d.findings[0].detail, Catch::Contains("cycle"));
}

TEST_CASE("diagnose: median and MAD") {
  CHECK(diagnose::median({3, 1, 2}) == 2);
  CHECK(diagnose::median({4, 1, 2, 3}) == 2.5);
  CHECK(diagnose::median({}) == 0);
  CHECK(diagnose::mad({1, 2, 3, 4, 100}, 3) == 1);
}

TEST_CASE("diagnose: a tp group whose collectives are slower than the other groups' is a slow link") {
  // 16 ranks, TP 4 × DP 4: each step a GEMM then a tp all-reduce; the group of ranks 4..7
  // takes 30 % longer from its last arrival to the end.
  std::vector<schedules::TraceRecord> v;
  for (int r = 0; r < 16; ++r)
    for (int s = 0; s < 3; ++s) {
      schedules::TraceRecord g;
      g.rank = r;
      g.op_index = 2 * s;
      g.name = "attn.proj";
      g.labels.iteration = s;
      g.start_s = 0.01 * s;
      g.duration_s = 1e-3;
      v.push_back(g);
      schedules::TraceRecord c = g;
      c.op_index = 2 * s + 1;
      c.stream = schedules::Stream::TpComm;
      c.kind = schedules::OpKind::AllReduce;
      c.name = "attn.allreduce";
      c.start_s = 0.01 * s + 1e-3;
      c.duration_s = r / 4 == 1 ? 2.6e-3 : 2e-3;
      v.push_back(c);
    }
  auto data = diagnose::from_trace(v, "l.json", 8);
  auto d = diagnose::diagnose_run(data);
  CHECK(of_kind(d, FindingKind::SlowLink).empty());
  CHECK_THAT(d.notes.front(), Catch::Contains("--layout"));
  data.layout = schedules::Layout{4, 4, 1};
  d = diagnose::diagnose_run(data);
  const auto links = of_kind(d, FindingKind::SlowLink);
  REQUIRE(links.size() == 1);
  CHECK(links[0]->ranks == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(links[0]->excess == Approx(0.3).epsilon(1e-6));
  CHECK(of_kind(d, FindingKind::Straggler).empty());
}

TEST_CASE("diagnose --baseline-steps: a rank that became slower is found, a persistently slow chip is not") {
  // rank 5 is 6 % slow in both steps (a slow chip: the spread, not a fault); rank 9 is
  // normal in the baseline step and 6 % slow after it (a fault that began)
  auto step = [](bool after) { return csv([after](int r) { return r == 5 || (after && r == 9) ? 1.06 : 1.0; }); };
  auto data = diagnose::read_per_rank_csv(step(false), "s0.csv", 8);
  diagnose::append_steps(data, diagnose::read_per_rank_csv(step(true), "s1.csv", 8));
  const auto plain = diagnose::diagnose_run(data);
  const auto plain_found = of_kind(plain, FindingKind::Straggler);
  REQUIRE_FALSE(plain_found.empty());
  CHECK(plain_found[0]->ranks == std::vector<int64_t>{5}); // the peer detector names the slow chip
  diagnose::DiagnoseOptions o;
  o.baseline_steps = 1;
  const auto onset = diagnose::diagnose_run(data, o);
  const auto found = of_kind(onset, FindingKind::Straggler);
  REQUIRE(found.size() == 1);
  CHECK(found[0]->ranks == std::vector<int64_t>{9});
  CHECK(found[0]->excess == Approx(0.06).epsilon(1e-6));
  CHECK(found[0]->detected_after_steps == 1);
  CHECK(found[0]->detail.find("rose") != std::string::npos);
  o.baseline_steps = 2; // nothing left after the baseline
  CHECK_THROWS_WITH(diagnose::diagnose_run(data, o), Catch::Contains("--baseline-steps 2") && Catch::Contains("has 2"));
}

TEST_CASE("diagnose: link loads name a link slow in both directions, not its one-way victims") {
  std::string t = "link,name,direction,kind,bytes,busy_s,busy_fraction,rate_fraction\n";
  char line[200];
  for (int l = 0; l < 12; ++l)
    for (const char* dir : {"up", "down"}) {
      double rate = 0.9 + 0.002 * (l % 3);
      if (l == 4) rate = 0.45;                               // degraded: both directions
      if (l == 7 && std::string(dir) == "down") rate = 0.45; // a victim: flows limited by link 4
      std::snprintf(line, sizeof line, "%d,server%d.nic0-tor0.r0#0,%s,nic-tor,%.0f,%.6f,%.6f,%.6f\n", l, l, dir,
                    1e9 * rate, 0.1, 0.5, rate);
      t += line;
    }
  diagnose::RunData data = diagnose::read_per_rank_csv(csv([](int) { return 1.0; }), "u.csv", 8);
  data.links = diagnose::read_link_csv(t, "links.csv");
  REQUIRE(data.links.size() == 24);
  const auto d = diagnose::diagnose_run(data);
  const auto slow = of_kind(d, FindingKind::SlowLink);
  REQUIRE(slow.size() == 1);
  CHECK(slow[0]->link == "server4.nic0-tor0.r0#0");
  CHECK(slow[0]->excess == Approx(0.5).epsilon(0.01));
  CHECK(diagnose::to_json(d).find("\"link\": \"server4.nic0-tor0.r0#0\"") != std::string::npos);
  bool noted = false;
  for (const auto& n : d.notes) noted = noted || n.find("1 link(s) slow in one direction") != std::string::npos;
  CHECK(noted);
}

TEST_CASE("diagnose: a bad link CSV names the file, line and column") {
  CHECK_THROWS_WITH(diagnose::read_link_csv("link,name\n", "l.csv"),
                    Catch::Contains("l.csv:1") && Catch::Contains("expected the header"));
  const std::string head = "link,name,direction,kind,bytes,busy_s,busy_fraction,rate_fraction\n";
  CHECK_THROWS_WITH(diagnose::read_link_csv(head + "0,x,sideways,nic-tor,1,1,1,1\n", "l.csv"),
                    Catch::Contains("l.csv:2") && Catch::Contains("direction") && Catch::Contains("up, down"));
  CHECK_THROWS_WITH(diagnose::read_link_csv(head + "0,x,up,nic-tor,-1,1,1,1\n", "l.csv"),
                    Catch::Contains("l.csv:2 column bytes"));
  CHECK_THROWS_WITH(diagnose::read_link_csv(head + "0,x,up\n", "l.csv"), Catch::Contains("expected 8 columns"));
}
