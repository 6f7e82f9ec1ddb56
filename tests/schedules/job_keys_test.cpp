// The job's key table (schedules/job_keys.cpp): each key described once and consistently,
// so that the readers, the writer, --set and docs/keys.md derived from it agree.
#include <catch2/catch.hpp>

#include <set>

#include "config/job_file.hpp"
#include "schedules/job_keys.hpp"
#include "schedules/schedule_json.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

TEST_CASE("job keys: every key of files and of JSON is described once, with a doc and a table", "[schedules][keys]") {
  std::set<std::string> file_keys, json_keys, sections;
  for (const KeySection& s : job_sections()) sections.insert(s.key);
  for (const JobKey& f : job_keys()) {
    INFO(f.key << " / " << f.json_key);
    REQUIRE((!f.key.empty() || !f.json_key.empty()));
    if (!f.key.empty()) {
      CHECK(file_keys.insert(f.key).second);
      CHECK(!f.doc.empty());
      CHECK(sections.count(std::string(key_parent(f.key))) == 1);
      CHECK(find_job_key(f.key) == &f);
    }
    if (!f.json_key.empty()) {
      CHECK(json_keys.insert(f.json_key).second);
      CHECK(f.get);
    }
    CHECK((f.type == KeyType::Name) == !f.names.empty());
  }
  CHECK(file_keys.count("parallel.tp") == 1);
  CHECK(file_keys.count("schedule.overlap.tp_chunks") == 1);
  CHECK(find_job_key("parallel.tpp") == nullptr);
  CHECK(find_job_key("schedule.selective_recompute") == nullptr); // a JSON-only key
}

TEST_CASE("job keys: each default lies in the key's range or among its names", "[schedules][keys]") {
  const JobSpec defaults;
  int checked = 0;
  for (const JobKey& f : job_keys()) {
    if (!f.get || f.required || !f.default_doc.empty()) continue;
    INFO(f.key << " / " << f.json_key);
    const KeyValue v = f.get(defaults);
    switch (f.type) {
    case KeyType::Integer:
      CHECK(std::get<int64_t>(v) >= f.int_min);
      CHECK(std::get<int64_t>(v) <= f.int_max);
      break;
    case KeyType::Number:
      CHECK(std::get<double>(v) >= f.num_min);
      CHECK(std::get<double>(v) <= f.num_max);
      break;
    case KeyType::Name: CHECK(std::count(f.names.begin(), f.names.end(), std::get<std::string>(v)) == 1); break;
    default: CHECK(v.index() == (f.type == KeyType::Boolean ? 2u : 3u));
    }
    ++checked;
  }
  CHECK(checked > 50);
}

TEST_CASE("job keys: setting every key to its own value leaves the job unchanged", "[schedules][keys]") {
  for (const char* name : {"tiny-megascale", "tiny-moe-hier", "tiny-fp8", "deepseek-v3-style"}) {
    INFO(name);
    const JobSpec job = config::load_job_preset(name);
    JobSpec copy = job;
    for (const JobKey& f : job_keys())
      if (f.get && f.set) f.set(copy, f.get(job));
    CHECK(job_to_json(copy) == job_to_json(job));
  }
}

TEST_CASE("job keys: the value of a key set is the value read back", "[schedules][keys]") {
  JobSpec job;
  find_job_key("parallel.tp")->set(job, KeyValue(int64_t{8}));
  find_job_key("schedule.pipeline")->set(job, KeyValue(std::string("zb-h1")));
  find_job_key("schedule.recompute")->set(job, KeyValue(std::string("selective")));
  find_job_key("model.dropout")->set(job, KeyValue(0.25));
  CHECK(job.parallel.tp == 8);
  CHECK(job.options.pipeline == PipelineKind::ZeroBubbleH1);
  CHECK(job.options.selective_recompute);
  CHECK_FALSE(job.options.recompute);
  CHECK(job.model.dropout == 0.25);
  CHECK(std::get<std::string>(find_job_key("schedule.recompute")->get(job)) == "selective");
}
