// The run directory's rank states (records/run_dir.hpp): the one record every executor
// writes and diagnose reads. Its text is fixed (simulated and real run directories, and
// the tools that read them, depend on it) and reads back to the same record.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "records/error.hpp"
#include "records/run_dir.hpp"
#include "tests/scratch.hpp"

using namespace twinscale;
namespace fs = std::filesystem;

namespace {

std::string fresh_dir(const std::string& name) { return twinscale::test::empty_scratch_dir("test-" + name).string(); }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

records::RankState sample() {
  records::RankState st;
  st.rank = 1;
  st.pid = 7;
  st.host = "h";
  st.status = records::RunStatus::TimedOut;
  st.ops_completed = 1;
  st.ops_total = 4;
  st.elapsed_s = 1.5;
  records::WaitingOp w;
  w.op_index = 3;
  w.name = "x";
  w.kind = schedules::OpKind::AllReduce;
  w.group = schedules::GroupKind::Tp;
  w.stream = schedules::Stream::TpComm;
  w.channel = "tp";
  w.sequence = 1;
  w.peers = {0, 1};
  w.waiting_s = 2.5;
  st.waiting = {w};
  st.issued = {{"tp", 2}};
  st.events = {{1, 3, 0.0, 1.0, true}};
  st.init_phases = {{"world", 0.25}};
  return st;
}

} // namespace

TEST_CASE("run dir: a rank state is written as fixed text and reads back to the same record") {
  const std::string dir = fresh_dir("rank-state");
  records::write_rank_state(dir, sample());
  const std::string path = records::rank_state_path(dir, 1);
  CHECK(path == (fs::path(dir) / "rank-1.json").string());
  CHECK(slurp(path) ==
        "{\"elapsed_s\":1.5,\"events\":[[3,0.0,1.0,true]],\"host\":\"h\",\"init_phases\":[[\"world\",0.25]],"
        "\"issued\":{\"tp\":2},\"ops_completed\":1,\"ops_total\":4,\"pid\":7,\"rank\":1,\"status\":\"timed_out\","
        "\"waiting\":[{\"channel\":\"tp\",\"group\":\"tp\",\"kind\":\"all_reduce\",\"name\":\"x\",\"op_index\":3,"
        "\"peers\":[0,1],\"sequence\":1,\"stream\":\"tp_comm\",\"waiting_s\":2.5}]}\n");

  const records::RankState back = records::read_rank_state(path);
  CHECK(back.rank == 1);
  CHECK(back.pid == 7);
  CHECK(back.host == "h");
  CHECK(back.status == records::RunStatus::TimedOut);
  CHECK(back.ops_completed == 1);
  CHECK(back.ops_total == 4);
  CHECK(back.issued == std::map<std::string, int64_t>{{"tp", 2}});
  REQUIRE(back.waiting.size() == 1);
  CHECK(back.waiting[0].kind == schedules::OpKind::AllReduce);
  CHECK(back.waiting[0].stream == schedules::Stream::TpComm);
  CHECK(back.waiting[0].peers == std::vector<int64_t>{0, 1});
  REQUIRE(back.events.size() == 1);
  CHECK(back.events[0].rank == 1);
  CHECK(back.events[0].failed);
  REQUIRE(back.init_phases.size() == 1);
  CHECK(back.init_phases[0].name == "world");

  const std::string again = fresh_dir("rank-state-again");
  records::write_rank_state(again, back);
  CHECK(slurp(records::rank_state_path(again, 1)) == slurp(path));
  fs::remove_all(dir);
  fs::remove_all(again);
}

TEST_CASE("run dir: a rank state with an unknown status or op kind is refused by file and key") {
  const std::string dir = fresh_dir("rank-state-bad");
  records::write_rank_state(dir, sample());
  const std::string path = records::rank_state_path(dir, 1);
  const std::string good = slurp(path);
  const auto rewrite = [&](const std::string& from, const std::string& to) {
    std::string text = good;
    text.replace(text.find(from), from.size(), to);
    std::ofstream(path) << text;
  };
  rewrite("\"timed_out\"", "\"sleeping\"");
  CHECK_THROWS_AS(records::read_rank_state(path), records::RecordError);
  CHECK_THROWS_WITH(records::read_rank_state(path),
                    Catch::Contains(path) && Catch::Contains("\"status\" has unknown value \"sleeping\""));
  rewrite("\"all_reduce\"", "\"all_reduce_twice\"");
  CHECK_THROWS_WITH(records::read_rank_state(path),
                    Catch::Contains(path) && Catch::Contains("\"kind\" has unknown value \"all_reduce_twice\""));
  CHECK_THROWS_WITH(records::read_rank_state(dir + "/rank-9.json"), Catch::Contains("rank-9.json: cannot open"));
  fs::remove_all(dir);
}

TEST_CASE("run dir: a rank state's numbers are checked, not converted with undefined or wrapped results") {
  const std::string dir = fresh_dir("rank-state-numbers");
  records::write_rank_state(dir, sample());
  const std::string path = records::rank_state_path(dir, 1);
  const std::string good = slurp(path);
  struct Case {
    std::string from, to, says;
  };
  // a double far outside an integer's range was cast to it (undefined behaviour), a
  // negative index wrapped to 4294967292, a negative or infinite time was taken as given
  const std::vector<Case> cases = {
      {"\"ops_completed\":1", "\"ops_completed\":1e300", "$.ops_completed: must be a whole number, got number"},
      {"\"rank\":1", "\"rank\":-1.5e300", "$.rank: must be a whole number"},
      {"\"rank\":1", "\"rank\":-1", "$.rank: -1 is out of range [0, 1048575]"},
      {"\"op_index\":3", "\"op_index\":-4", "$.waiting[0].op_index: -4 is out of range [0, 4294967295]"},
      {"\"ops_total\":4", "\"ops_total\":4294967296", "$.ops_total: 4294967296 is out of range"},
      {"\"elapsed_s\":1.5", "\"elapsed_s\":-1.5", "$.elapsed_s: -1.5 is not a time"},
      {"\"peers\":[0,1]", "\"peers\":[0,-1]", "$.waiting[0].peers[1]: -1 is out of range"},
      {"\"tp\":2", "\"tp\":-2", "$.issued.tp: -2 is out of range"},
      {"[3,0.0,1.0,true]", "[3,2.0,1.0,true]", "$.events[0]: ends before it starts"},
  };
  for (const Case& c : cases) {
    std::string text = good;
    const size_t at = text.find(c.from);
    REQUIRE(at != std::string::npos);
    text.replace(at, c.from.size(), c.to);
    std::ofstream(path) << text;
    INFO(c.to);
    CHECK_THROWS_AS(records::read_rank_state(path), records::RecordError);
    CHECK_THROWS_WITH(records::read_rank_state(path), Catch::Contains(path) && Catch::Contains(c.says));
  }
  fs::remove_all(dir);
}
