// M19 analysis of per-rank state files: who waits for whom, and the rank that everyone
// waits on and that logged nothing; the state files themselves (records/run_dir.hpp).
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "diagnose/error.hpp"
#include "diagnose/hang_report.hpp"
#include "records/run_dir.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

records::WaitingOp pending(uint32_t op, schedules::OpKind kind, schedules::GroupKind group, std::string channel,
                           int64_t seq, std::vector<int64_t> peers) {
  records::WaitingOp p;
  p.op_index = op;
  p.name = "x";
  p.kind = kind;
  p.group = group;
  p.channel = std::move(channel);
  p.sequence = seq;
  p.peers = std::move(peers);
  p.waiting_s = 2.5;
  return p;
}

std::string fresh_dir(const std::string& name) { return twinscale::test::empty_scratch_dir("test-" + name).string(); }

} // namespace

TEST_CASE("hang report: the silent rank everyone waits on is the suspect") {
  using schedules::GroupKind;
  using schedules::OpKind;
  const std::string dir = fresh_dir("hang");
  // 4 ranks; rank 3 died. Rank 1 waits for its recv from 3; rank 0 waits for the TP
  // all-reduce #2 that rank 1 never reached; rank 2 waits for the DP all-reduce with 3.
  records::RankState s0, s1, s2;
  s0.rank = 0;
  s0.status = records::RunStatus::TimedOut;
  s0.issued = {{"tp", 3}};
  s0.waiting = {pending(7, OpKind::AllReduce, GroupKind::Tp, "tp", 2, {0, 1})};
  s0.events = {{0, 0, 0.0, 1.0, false}, {0, 7, 1.0, 4.0, true}};
  s1.rank = 1;
  s1.status = records::RunStatus::TimedOut;
  s1.issued = {{"tp", 2}, {"recv:pp:3", 1}};
  s1.waiting = {pending(5, OpKind::Recv, GroupKind::Pp, "recv:pp:3", 0, {3})};
  s2.rank = 2;
  s2.status = records::RunStatus::TimedOut;
  s2.issued = {{"dp", 1}, {"send:pp:1", 0}};
  s2.waiting = {pending(9, OpKind::AllReduce, GroupKind::Dp, "dp", 0, {2, 3})};
  for (auto* s : {&s0, &s1, &s2}) records::write_rank_state(dir, *s);

  const diagnose::HangReport r = diagnose::analyse_run_dir(dir, 4);
  CHECK_FALSE(r.all_completed());
  CHECK(r.silent == std::vector<int64_t>{3});
  REQUIRE(r.suspects.size() == 2);
  CHECK(r.suspects[0].rank == 3);
  CHECK(r.suspects[0].logged_nothing);
  CHECK(r.suspects[0].waited_on_by == std::vector<int64_t>{1, 2});
  CHECK(r.suspects[1].rank == 1);
  CHECK_FALSE(r.suspects[1].logged_nothing);
  REQUIRE(r.waits.size() == 3);
  CHECK(r.waits[0].not_arrived == std::vector<int64_t>{1});
  CHECK(r.waits[1].not_arrived == std::vector<int64_t>{3});
  CHECK(r.waits[2].not_arrived == std::vector<int64_t>{3});
  CHECK_THAT(r.summary(), Catch::Contains("suspect rank 3: logged nothing"));
  diagnose::write_hang_report(r, dir + "/report.json");
  CHECK(fs::exists(dir + "/report.json"));

  const records::RankState back = records::read_rank_state(dir + "/rank-0.json");
  CHECK(back.events.size() == 2);
  CHECK(back.events[1].failed);
  CHECK(back.waiting[0].channel == "tp");
  fs::remove_all(dir);
}

TEST_CASE("hang report: a p2p peer has arrived when it issued the matching send") {
  using schedules::GroupKind;
  using schedules::OpKind;
  const std::string dir = fresh_dir("p2p");
  records::RankState a, b;
  a.rank = 0;
  a.status = records::RunStatus::TimedOut;
  a.waiting = {pending(1, OpKind::Recv, GroupKind::Pp, "recv:pp:1", 1, {1})};
  b.rank = 1;
  b.status = records::RunStatus::TimedOut;
  b.issued = {{"send:pp:0", 2}};
  for (auto* s : {&a, &b}) records::write_rank_state(dir, *s);
  const diagnose::HangReport r = diagnose::analyse_run_dir(dir, 2);
  REQUIRE(r.waits.size() == 1);
  CHECK(r.waits[0].not_arrived.empty());
  CHECK(r.suspects.empty());
  fs::remove_all(dir);
}

TEST_CASE("hang report: malformed state files and missing directories are named") {
  const std::string dir = fresh_dir("bad");
  { std::ofstream(dir + "/rank-0.json") << "{\"rank\": 0}"; }
  CHECK_THROWS_WITH(diagnose::analyse_run_dir(dir, 1), Catch::Contains("rank-0.json"));
  CHECK_THROWS_AS(diagnose::analyse_run_dir(dir + "/nope", 1), diagnose::DiagnoseError);
  fs::remove_all(dir);
}

TEST_CASE("hang report: a rank state with a repeated or unknown key, or that is not a file, is named") {
  const std::string dir = fresh_dir("strict");
  records::RankState st;
  st.rank = 0;
  st.host = "h";
  records::write_rank_state(dir, st);
  const std::string file = dir + "/rank-0.json";
  std::ifstream in(file);
  const std::string good((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(records::read_rank_state(file).host == "h");
  std::string twice = good;
  twice.insert(1, "\"rank\":3,");
  std::ofstream(file, std::ios::trunc) << twice;
  CHECK_THROWS_WITH(records::read_rank_state(file),
                    Catch::Contains("rank-0.json") && Catch::Contains("key \"rank\" is given twice"));
  std::string typo = good;
  typo.insert(1, "\"statsu\":\"running\",");
  std::ofstream(file, std::ios::trunc) << typo;
  CHECK_THROWS_WITH(records::read_rank_state(file),
                    Catch::Contains("unknown key \"statsu\"; did you mean \"status\"?"));
  fs::remove(file);
  fs::create_directory(file);
  CHECK_THROWS_WITH(records::read_rank_state(file),
                    Catch::Contains("rank-0.json") && Catch::Contains("not a regular file"));
  fs::remove_all(dir);
}
