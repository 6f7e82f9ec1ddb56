// Schedule JSON: round trip, determinism, and errors that name the file and JSON path.
#include <catch2/catch.hpp>

#include <sstream>

#include "config/job_file.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule_equal.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
std::string to_json(const Schedule& s) {
  std::ostringstream os;
  write_schedule_json(s, os);
  return os.str();
}
Schedule from_json(const std::string& text) {
  std::istringstream in(text);
  return read_schedule_json(in, "s.json");
}
std::string replace_first(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
} // namespace

TEST_CASE("schedule JSON round trip", "[schedules][json]") {
  for (const char* name :
       {"tiny-1f1b", "tiny-megascale", "tiny-moe", "tiny-fsdp", "tiny-fp8", "tiny-moe-hier", "tiny-moe-node-limited"}) {
    INFO(name);
    const Schedule s = lower(config::load_job_preset(name));
    const std::string text = to_json(s);
    const Schedule back = from_json(text);
    CHECK(back.version == kScheduleFormatVersion);
    CHECK(back.job.name == s.job.name);
    CHECK(back.job.parallel.dp == s.job.parallel.dp);
    CHECK(back.job.options.overlap.tp_chunks == s.job.options.overlap.tp_chunks);
    CHECK(back.job.model.attention == s.job.model.attention);
    CHECK(back.layout.world() == s.layout.world());
    CHECK(back.names == s.names);
    CHECK(back.program_of_rank == s.program_of_rank);
    CHECK(back.model_flops_per_iteration == s.model_flops_per_iteration);
    REQUIRE(back.programs.size() == s.programs.size());
    for (size_t p = 0; p < s.programs.size(); ++p) CHECK(s.programs[p].deps == back.programs[p].deps);
    std::string why; // every field of every op (names as text), dependencies, memory, job
    CHECK(schedules_equal(s, back, &why));
    CHECK(why.empty());
    CHECK(to_json(back) == text); // byte-identical
    CHECK(validate(back).empty());
  }
}

TEST_CASE("schedule JSON errors name the file and the JSON path", "[schedules][json]") {
  const std::string text = to_json(lower(config::load_job_preset("tiny-1f1b")));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"kind\":\"elementwise\"", "\"kind\":\"elementwize\"")),
                    Catch::Contains("s.json") && Catch::Contains("$.programs[0].ops[0].kind") &&
                        Catch::Contains("elementwize"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"format_version\":1", "\"format_version\":7")),
                    Catch::Contains("$.format_version") && Catch::Contains("7"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"tp\":2,\"vpp\"", "\"tp\":\"2\",\"vpp\"")),
                    Catch::Contains("$.job.parallel.tp"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"program_of_rank\":[0,", "\"program_of_rank\":[5,")),
                    Catch::Contains("$.program_of_rank[0]"));
  CHECK_THROWS_WITH(from_json("{\"format\": 3"), Catch::Contains("s.json") && Catch::Contains("JSON"));
}

TEST_CASE("schedule JSON refuses unknown and duplicate keys, naming them", "[schedules][json]") {
  const std::string text = to_json(lower(config::load_job_preset("tiny-1f1b")));
  // a misspelt job key: did-you-mean from the job's key table
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"tp\":2,\"vpp\"", "\"tpp\":2,\"tp\":2,\"vpp\"")),
                    Catch::Contains("$.job.parallel.tpp") && Catch::Contains("unknown key") &&
                        Catch::Contains("did you mean \"tp\"?"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"kind\":\"elementwise\"", "\"kind\":\"elementwise\",\"knid\":1")),
                    Catch::Contains("$.programs[0].ops[0].knid") && Catch::Contains("did you mean \"kind\"?"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"format\":", "\"formats\":1,\"format\":")),
                    Catch::Contains("$.formats") && Catch::Contains("unknown key"));
  // a key stated twice would otherwise be read as its last value, silently
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"tp\":2,\"vpp\"", "\"tp\":2,\"tp\":4,\"vpp\"")),
                    Catch::Contains("s.json") && Catch::Contains("$.job.parallel.tp") &&
                        Catch::Contains("duplicate key \"tp\""));
  CHECK_THROWS_WITH(
      from_json(replace_first(text, "\"kind\":\"elementwise\"", "\"kind\":\"elementwise\",\"kind\":\"gemm\"")),
      Catch::Contains("$.programs[0].ops[0].kind") && Catch::Contains("duplicate key"));
}

TEST_CASE("schedule JSON reads job values with the ranges and names of job files", "[schedules][json]") {
  const std::string text = to_json(lower(config::load_job_preset("tiny-1f1b")));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"zero_stage\":1", "\"zero_stage\":7")),
                    Catch::Contains("$.job.parallel.zero_stage") && Catch::Contains("integer in [0, 3], got 7"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"iterations\":1", "\"iterations\":0")),
                    Catch::Contains("$.job.schedule.iterations") && Catch::Contains("integer in [1, 1000]"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"pipeline\":\"1f1b\"", "\"pipeline\":\"1f1c\"")),
                    Catch::Contains("$.job.schedule.pipeline") && Catch::Contains("valid: 1f1b, interleaved, zb-h1"));
  CHECK_THROWS_WITH(from_json(replace_first(text, "\"layers\":", "\"layerz\":")),
                    Catch::Contains("$.job.model") && Catch::Contains("missing \"layers\""));
}
