// Axes from the key tables: "job.KEY" and "cluster.KEY" for any key of the job and cluster
// tables, checked by the key's type, range and value names; a short axis that is a table key
// is an alias of it (its long spelling is the same axis, stored under the short name);
// the study file's own keys are read through the study key table.
#include <filesystem>

#include <catch2/catch.hpp>

#include "config/error.hpp"
#include "study/axes.hpp"
#include "study/points.hpp"
#include "study/report.hpp"
#include "study/store.hpp"
#include "study/study_file.hpp"
#include "study/study_keys.hpp"
#include "tests/backend/mpi_helpers.hpp"

using namespace twinscale;
using Catch::Matchers::Contains;

namespace {

study::StudySpec parse(const std::string& axes) {
  return study::parse_study("name = \"t\"\n[base]\njob = \"tiny-megascale\"\ngpus = 16\n[axes]\n" + axes, "s.toml");
}

std::string error_of(const std::string& axes) {
  try {
    parse(axes);
  } catch (const config::ConfigError& e) {
    return e.what();
  }
  return "no error";
}

} // namespace

TEST_CASE("study file: job. and cluster. keys are axes, aliases resolve to the short axis", "[study]") {
  const auto s = parse("\"cluster.switch.latency_ns\" = [600, 1200]\n\"job.model.layers\" = [4, 8]\n"
                       "\"job.parallel.tp\" = [1, 2]\n\"job.schedule.recompute\" = [true, \"selective\"]\n"
                       "\"cluster.server.nics\" = [4]\n\"job.gpus\" = [16]\n");
  // canonical order: short axes (gpus, tp, nics), then job keys, then cluster keys, in table order
  REQUIRE(s.axes.size() == 6);
  CHECK(s.axes[0].name == "gpus");
  CHECK(s.axes[1].name == "tp");
  CHECK(s.axes[2].name == "nics");
  CHECK(s.axes[3].name == "job.model.layers");
  CHECK(s.axes[4].name == "job.schedule.recompute");
  CHECK(s.axes[5].name == "cluster.switch.latency_ns");
  // a name that accepts a boolean stores the name it means
  CHECK(s.axes[4].values == std::vector<study::Value>{std::string("full"), std::string("selective")});
  CHECK(s.axes[5].values == std::vector<study::Value>{600.0, 1200.0});
  const auto points = study::generate_points(s);
  CHECK(
      study::inputs_json(points[0]) ==
      R"({"gpus":16,"tp":1,"nics":4,"job.model.layers":4,"job.schedule.recompute":"full","cluster.switch.latency_ns":600.0})");
  // an alias is the table's key: its type, range and setter
  const study::AxisDef& tp = study::axis_def("tp");
  REQUIRE(tp.job_key != nullptr);
  CHECK(tp.job_key->key == "parallel.tp");
  CHECK(&study::axis_def("job.parallel.tp") == &tp);
  CHECK(study::axis_def("nics").cluster_key->key == "server.nics");
  CHECK(study::axis_def("cluster.gpu.model").in_document);
}

TEST_CASE("study file: a key-table axis' values are checked by the key", "[study]") {
  CHECK_THAT(error_of("\"job.parallel.zero_stage\" = [4]\n"),
             Contains("s.toml: key 'axes.\"job.parallel.zero_stage\"[0]' is 4; must be in [0, 3]"));
  CHECK_THAT(error_of("\"job.schedule.pipeline\" = [\"gpipe\"]\n"),
             Contains("axes.\"job.schedule.pipeline\"[0]' is \"gpipe\"; valid values: 1f1b, interleaved, zb-h1"));
  CHECK_THAT(error_of("\"cluster.server.nic_gbit_per_s\" = [0]\n"), Contains("must be a finite number > 0"));
  CHECK_THAT(error_of("\"cluster.gpu.model\" = [\"Z80\"]\n"), Contains("valid values: A100-SXM-40GB"));
  CHECK_THAT(error_of("\"job.model.rotary\" = [1]\n"), Contains("must be true or false"));
  CHECK_THAT(
      error_of("\"job.parallel.tpp\" = [1]\n"),
      Contains("'axes.\"job.parallel.tpp\"' is not a key of the job key table (did you mean 'job.parallel.tp'?)"));
  CHECK_THAT(error_of("\"cluster.sever.nics\" = [1]\n"), Contains("did you mean 'cluster.server.nics'?"));
  CHECK_THAT(error_of("tpp = [1]\n"), Contains("key 'axes.tpp' is not an axis (did you mean 'tp'?); valid axes: job"));
  CHECK_THAT(error_of("\"job.parallel.dp\" = [1]\n"), Contains("is derived"));
  CHECK_THAT(error_of("\"cluster.fabric.oversubscription\" = [1]\n"), Contains("the axis oversubscription"));
  CHECK_THAT(error_of("\"cluster.gpu_groups.model\" = [\"A100-SXM-40GB\"]\n"), Contains("the axis cluster"));
  CHECK_THAT(error_of("tp = [1]\n\"job.parallel.tp\" = [2]\n"), Contains("are the same axis (tp); keep one"));
  CHECK_THAT(error_of("recompute = [true]\n\"job.schedule.recompute\" = [\"full\"]\n"), Contains("keep one"));
}

TEST_CASE("study file: its own keys come from the study key table", "[study]") {
  const auto has = [](const std::string& key) {
    for (const auto& f : study::study_keys())
      if (f.key == key) return true;
    return false;
  };
  for (const char* key : {"name", "base.job", "base.placement", "sample.method", "sample.points", "filters.memory_fits",
                          "evaluate.what", "evaluate.flow_best", "campaign.days"})
    CHECK(has(key));
  // the reader takes the table's ranges and value names
  CHECK_THROWS_WITH(
      study::parse_study("name = \"t\"\n[base]\njob = \"tiny-1f1b\"\nplacement = \"ring\"\n[axes]\ntp = [1]\n",
                         "s.toml"),
      Contains("s.toml: key 'base.placement' is \"ring\"; valid values: linear, tor-aware, random"));
  CHECK_THROWS_WITH(study::parse_study("name = \"t\"\n[base]\njob = \"tiny-1f1b\"\n[axes]\ntp = [1]\n[campaign]\n"
                                       "days = 0\n[evaluate]\nwhat = \"campaign\"\n",
                                       "s.toml"),
                    Contains("key 'campaign.days' is 0"));
  const std::string doc = study::study_keys_markdown();
  CHECK_THAT(doc, Contains("## Study files"));
  CHECK_THAT(doc, Contains("| `base.placement` | \"linear\" \\| \"tor-aware\" \\| \"random\""));
  CHECK_THAT(doc, Contains("### [axes]"));
  CHECK_THAT(doc, Contains("| `tp` | integer ≥ 1 |  | `job.parallel.tp` |"));
  CHECK(doc.find("### [axes]") < doc.find("### [filters]"));
}

TEST_CASE("store: a key-table axis is stored and shown under its name", "[study]") {
  const std::string dir = backend::test::fresh_dir("key-axes-store");
  const auto spec = parse("\"job.model.layers\" = [4, 8]\n\"job.parallel.tp\" = [2]\n");
  const auto points = study::generate_points(spec);
  {
    study::Store store(dir + "/s.db", spec, points);
    for (const auto& p : points) {
      study::PointResult r;
      r.id = p.id;
      r.mfu = 0.1 * static_cast<double>(p.id + 1);
      store.put(p, r);
    }
  }
  const study::Store read(dir + "/s.db");
  CHECK(read.info().axes == std::vector<std::string>{"tp", "job.model.layers"});
  const auto rows = read.rows();
  REQUIRE(rows.size() == 2);
  CHECK(rows[1].inputs == R"({"tp":2,"job.model.layers":8})");
  CHECK_THAT(study::rows_csv(read.info(), rows), Contains("id,axis_tp,axis_job.model.layers,status,"));
  CHECK_THAT(study::summary_table(read.info(), rows, 2), Contains("| tp=2 job.model.layers=8"));
  std::filesystem::remove_all(dir);
}
