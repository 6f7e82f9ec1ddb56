// The results store and one point's evaluation.
#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

#include <catch2/catch.hpp>

#include "config/error.hpp"
#include "study/evaluate.hpp"
#include "study/report.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "tests/study/store_fixture.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;

namespace {

std::string temp_db(const std::string& name) { return study::test::temp_store("study-" + name); }

const char* kStudy = R"(
name = "store-test"
[base]
job = "tiny-megascale"
gpus = 16
[axes]
tp = [1, 2]
pp = [2, 4]
vpp = [1]
micro_batch = [1, 2]
)";

} // namespace

TEST_CASE("evaluate: feasible points simulate, impossible ones say why", "[study]") {
  const auto spec = study::parse_study(kStudy, "s.toml");
  const auto points = study::generate_points(spec);
  study::Evaluator ev(spec);
  const auto ok = ev.evaluate(points[0]); // tp 1, pp 2, mb 1: dp 8, 1 micro-batch per pipeline
  CHECK(ok.status == study::PointStatus::Ok);
  CHECK(ok.dp == 8);
  CHECK(ok.mode == "analytic");
  CHECK(ok.mfu > 0);
  CHECK(ok.iteration_time_s > 0);
  const auto again = study::Evaluator(spec).evaluate(points[0]);
  CHECK(study::to_json(again) == study::to_json(ok)); // deterministic, cache or not
  CHECK(study::to_json(study::point_result_from_json(study::to_json(ok))) == study::to_json(ok));

  const auto bad = ev.evaluate(points[1]); // tp 1, pp 2, mb 2: batch 8 not divisible by dp 8 · 2
  CHECK(bad.status == study::PointStatus::Infeasible);
  CHECK_THAT(bad.reason, Contains("global_batch"));
}

TEST_CASE("evaluate: the memory filter leaves out a model that does not fit", "[study]") {
  const auto spec = study::parse_study(R"(
name = "mem"
[base]
job = "gpt-175b-megascale"
gpus = 8
global_batch = 8
[axes]
tp = [8]
pp = [1]
vpp = [1]
[evaluate]
what = "memory"
)",
                                       "m.toml");
  const auto r = study::Evaluator(spec).evaluate(study::generate_points(spec)[0]);
  CHECK(r.status == study::PointStatus::Infeasible);
  CHECK_THAT(r.reason, Contains("per GPU"));
  CHECK(r.memory_bytes > r.gpu_memory_bytes);
}

TEST_CASE("store: rows survive reopening, a changed study is refused", "[study]") {
  const std::string db = temp_db("reopen");
  const auto spec = study::parse_study(kStudy, "s.toml");
  const auto points = study::generate_points(spec);
  study::Evaluator ev(spec);
  {
    study::Store store(db, spec, points);
    CHECK(store.done().empty());
    store.put(points[0], ev.evaluate(points[0]));
    store.put(points[3], ev.evaluate(points[3]));
    auto changed = ev.evaluate(points[0]);
    changed.reason = "changed";
    store.put(points[0], changed); // a second row for a point is ignored
  }
  study::Store store(db, spec, points);
  CHECK(store.done() == std::set<int64_t>{0, 3});
  const auto rows = store.rows();
  REQUIRE(rows.size() == 2);
  CHECK(study::to_json(rows[0].result) == study::to_json(ev.evaluate(points[0])));
  CHECK(rows[0].inputs == study::inputs_json(points[0]));
  CHECK(rows[0].version == study::twinscale_version());
  CHECK_FALSE(rows[0].flow.has_value());
  CHECK(store.info().axes == std::vector<std::string>{"tp", "pp", "vpp", "micro_batch"});

  auto flow = ev.evaluate_flow(points[0]);
  store.put_flow(flow);
  CHECK(store.flow_done() == std::set<int64_t>{0});
  REQUIRE(store.rows()[0].flow.has_value());
  CHECK(store.rows()[0].flow->mfu == flow.mfu);

  const auto other = study::parse_study(std::string(kStudy) + "[filters]\nmemory_fits = false\n", "s2.toml");
  CHECK_THROWS_WITH(study::Store(db, other, study::generate_points(other)),
                    Contains("belongs to study 'store-test'") && Contains("s2.toml"));
  CHECK_THROWS_AS(study::Store(temp_db("missing")), study::StoreError);
}

TEST_CASE("report: ranking, Pareto front and CSV", "[study]") {
  std::vector<study::StoredPoint> rows(4);
  const double mfu[] = {0.5, 0.7, 0.6, 0.7};
  const double mem[] = {10e9, 30e9, 20e9, 40e9};
  for (int i = 0; i < 4; ++i) {
    rows[i].result.id = i;
    rows[i].result.mfu = mfu[i];
    rows[i].result.memory_bytes = mem[i];
    rows[i].inputs = "{\"tp\":" + std::to_string(i + 1) + "}";
  }
  rows[2].result.status = study::PointStatus::Ok;
  CHECK(study::best_ids(rows, 3) == std::vector<int64_t>{1, 3, 2});
  std::vector<int64_t> front;
  for (const auto* p : study::pareto_front(rows)) front.push_back(p->result.id);
  CHECK(front == std::vector<int64_t>{0, 2, 1}); // 3 has the MFU of 1 with more memory
  study::StoreInfo info;
  info.axes = {"tp"};
  const std::string csv = study::rows_csv(info, rows);
  CHECK_THAT(csv, Contains("id,axis_tp,status,reason,"));
  std::set<std::string> names; // every column name once
  std::stringstream header(csv.substr(0, csv.find('\n')));
  for (std::string name; std::getline(header, name, ',');) CHECK(names.insert(name).second);
  CHECK(names.count("tp") == 1);
  CHECK_THAT(csv, Contains("\n1,2,ok,,"));
}

TEST_CASE("evaluate: a campaign point gives ETTR under scaled fault rates and checkpoint intervals", "[study]") {
  const auto spec = study::parse_study(R"(
name = "campaign"
[base]
job = "tiny-megascale"
gpus = 16
[axes]
fault_rate_scale = [1, 1000]
checkpoint_interval_s = [1e-6, 3600]
[evaluate]
what = "campaign"
[campaign]
faults = "llama3-405b"
recovery = "megascale"
days = 1
seeds = 2
)",
                                       "c.toml");
  const auto points = study::generate_points(spec);
  REQUIRE(points.size() == 4);
  study::Evaluator ev(spec);
  const auto too_short = ev.evaluate(points[0]); // a checkpoint every microsecond cannot be taken
  CHECK(too_short.status == study::PointStatus::Infeasible);
  CHECK_THAT(too_short.reason, Contains("campaign"));
  const auto calm = ev.evaluate(points[1]);
  const auto stormy = ev.evaluate(points[3]);
  REQUIRE(calm.status == study::PointStatus::Ok);
  REQUIRE(stormy.status == study::PointStatus::Ok);
  CHECK(calm.campaign);
  CHECK(calm.ettr > 0);
  CHECK(calm.ettr <= 1);
  CHECK(stormy.ettr < calm.ettr); // 1000× the fault rate costs training time
  CHECK(stormy.interruptions > calm.interruptions);
  CHECK(stormy.score() == stormy.mfu * stormy.ettr);
  CHECK(study::to_json(study::Evaluator(spec).evaluate(points[3])) == study::to_json(stormy));
  CHECK(study::to_json(study::point_result_from_json(study::to_json(stormy))) == study::to_json(stormy));

  const std::string db = temp_db("campaign");
  study::Store store(db, spec, points);
  store.put(points[3], stormy);
  const auto rows = store.rows();
  REQUIRE(rows.size() == 1);
  CHECK(study::to_json(rows[0].result) == study::to_json(stormy));
  CHECK_THROWS_WITH(
      study::parse_study("name = \"x\"\n[base]\njob = \"tiny-megascale\"\n[axes]\nfault_rate_scale = [1]\n", "x.toml"),
      Contains("x.toml") && Contains("evaluate.what") && Contains("campaign"));
  CHECK_THROWS_WITH(
      study::Evaluator(study::parse_study(
          "name = \"x\"\n[base]\njob = \"tiny-megascale\"\n[axes]\ntp = [1]\n[evaluate]\nwhat = \"campaign\"\n"
          "[campaign]\nfaults = \"nope\"\n",
          "x.toml")),
      Contains("x.toml") && Contains("campaign.faults"));
}

TEST_CASE("evaluate in threads: the results of one thread, handed on in point order, and a failure stops it cleanly",
          "[study]") {
  const auto spec = study::parse_study(kStudy, "s.toml");
  const auto points = study::generate_points(spec);
  std::vector<int64_t> todo;
  for (const auto& p : points) todo.push_back(p.id);
  std::reverse(todo.begin(), todo.end()); // any order: results come back in todo's
  const auto collect = [&](int threads) {
    study::Evaluator own(spec);
    std::vector<std::string> out;
    study::evaluate_in_threads(own, spec, points, todo, threads,
                               [&](const study::Point& p, const study::PointResult& r) {
                                 CHECK(r.id == p.id);
                                 out.push_back(study::to_json(r));
                               });
    return out;
  };
  const auto one = collect(1);
  REQUIRE(one.size() == todo.size());
  CHECK(collect(3) == one);
  CHECK(collect(64) == one); // more threads than points

  // The consumer fails on the third result: the exception reaches the caller, after the
  // first two were handed on, and every worker is joined (no hang, no crash).
  study::Evaluator own(spec);
  int handed = 0;
  CHECK_THROWS_WITH(study::evaluate_in_threads(own, spec, points, todo, 3,
                                               [&](const study::Point&, const study::PointResult&) {
                                                 if (++handed == 3) throw std::runtime_error("disk full");
                                               }),
                    Contains("disk full"));
  CHECK(handed == 3);

  // a flow-mode study runs on one thread only
  auto flow = spec;
  flow.mode = study::SimModeChoice::Flow;
  CHECK_FALSE(study::study_runs_in_threads(flow));
  CHECK(study::study_runs_in_threads(spec));
  CHECK_THROWS(
      study::evaluate_in_threads(own, flow, points, todo, 2, [](const study::Point&, const study::PointResult&) {}));
}
