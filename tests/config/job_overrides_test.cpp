// --set on a job, checked against the job's key table before the document is read: unknown
// keys named with the nearest ones, values of the wrong type refused with what the key
// takes, bare text for keys that take text.
#include <catch2/catch.hpp>

#include <string>

#include "config/error.hpp"
#include "config/job_file.hpp"

using namespace twinscale;

namespace {
config::JobEdits set(std::initializer_list<const char*> texts) {
  config::JobEdits e;
  for (const char* t : texts) e.set.push_back(config::parse_key_override(t));
  return e;
}
std::string error_of(std::initializer_list<const char*> texts) {
  try {
    config::load_job_preset("tiny-1f1b", set(texts));
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  FAIL("no error");
  return "";
}
} // namespace

TEST_CASE("job --set: an unknown key is named with the keys it may mean", "[config][overrides]") {
  auto msg = error_of({"parallel.tpp=4"});
  CHECK_THAT(msg, Catch::Contains("--set parallel.tpp=4: unknown key 'parallel.tpp'; did you mean 'parallel.tp'?"));
  CHECK_THAT(msg, Catch::Contains("docs/keys.md"));
  msg = error_of({"tp_chunks=4"}); // a key without its table
  CHECK_THAT(msg, Catch::Contains("did you mean 'schedule.overlap.tp_chunks'?"));
  msg = error_of({"model.no_such_key=1"});
  CHECK_THAT(msg, Catch::Contains("unknown key 'model.no_such_key'"));
  CHECK_THAT(error_of({"schedule.selective_recompute=true"}), Catch::Contains("unknown key")); // JSON only
}

TEST_CASE("job --set: a value of another type than the key's is refused with what it takes", "[config][overrides]") {
  CHECK_THAT(error_of({"parallel.tp=four"}),
             Catch::Contains("--set parallel.tp=four: key 'parallel.tp' takes integer ≥ 1"));
  CHECK_THAT(error_of({"schedule.overlap.dp=1"}), Catch::Contains("takes boolean"));
  CHECK_THAT(error_of({"model.dropout=high"}), Catch::Contains("takes number in [0, 0.999]"));
  // the range is checked as the file's own keys are
  CHECK_THAT(error_of({"parallel.zero_stage=4"}), Catch::Contains("key 'parallel.zero_stage' is 4; must be in [0, 3]"));
  CHECK_THAT(error_of({"schedule.pipeline=zb"}), Catch::Contains("valid values: 1f1b, interleaved, zb-h1"));
}

TEST_CASE("job --set: keys that take text read a bare value as text", "[config][overrides]") {
  // 2024 reads as a TOML integer, but a name is text
  CHECK_THAT(error_of({"software=2024"}), Catch::Contains("\"2024\" is not a software preset"));
  const auto job = config::load_job_preset("tiny-1f1b", set({"schedule.recompute=selective", "name=123"}));
  CHECK(job.options.selective_recompute);
  CHECK(job.name == "123");
  CHECK(config::load_job_preset("tiny-1f1b", set({"schedule.recompute=true"})).options.recompute);
  CHECK(config::load_job_preset("tiny-1f1b", set({"gpus=8"})).parallel.dp == 2);
}
