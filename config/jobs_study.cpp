// Jobs-on-one-fabric study file (TOML). Every key, its unit and default:
//
//   cluster = "tiny-3tier"   # cluster preset or file in this file's folder (required)
//   seed = 1                 # ECMP hash salt
//
//   [[job]]                  # one table per job (at least one), placed in this order
//   name = "a"               # unique; default "job<i>"
//   job = "tiny-megascale"   # job preset or file in this file's folder (required)
//   gpus = 32                # GPUs (whole servers); dp = gpus / (tp·pp) (required)
//   global_batch = 0         # 0: the job's own
//   placement = "linear"     # linear | tor-aware | random (topology/multi_placement.hpp)
//   placement_seed = 1       # random placement only
//   start_s = 0              # seconds after the study's start when the job starts (≥ 0)
//   iterations = 0           # iterations back to back; 0: the job's own
#include "config/jobs_study.hpp"

#include <filesystem>
#include <set>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"

namespace twinscale::config {

namespace {

bool is_preset(const std::string& kind, const std::string& name) {
  for (const auto& n : preset_names(kind))
    if (n == name) return true;
  return false;
}

} // namespace

JobsStudy load_jobs_study(const std::string& path) {
  const toml::table tbl = parse_toml_file(path);
  TableReader t(tbl, path);
  JobsStudy s;
  s.file = path;
  s.cluster = resolve_document_reference(path, t.get_string("cluster"), "cluster", "clusters");
  s.seed = static_cast<uint64_t>(t.get_int("seed", 1, 0));
  auto tables = t.table_array("job");
  if (tables.empty()) t.fail("job", "needs at least one [[job]] table (job, gpus, placement)");
  std::set<std::string> names;
  for (size_t i = 0; i < tables.size(); ++i) {
    TableReader& j = tables[i];
    StudyJob sj;
    sj.name = j.get_string("name", "job" + std::to_string(i));
    if (!names.insert(sj.name).second) j.fail("name", "'" + sj.name + "' names two jobs; names must be unique");
    const std::string ref = j.get_string("job");
    const std::string resolved = resolve_document_reference(path, ref, "job[" + std::to_string(i) + "].job", "jobs");
    sj.source = resolved;
    sj.job = (resolved == ref && is_preset("jobs", ref)) ? load_job_preset(ref) : load_job(resolved);
    const int64_t gpus = j.get_int("gpus", std::nullopt, 1, 1 << 20);
    const int64_t batch = j.get_int("global_batch", 0, 0);
    try {
      apply_overrides(sj.job, gpus, batch > 0 ? std::optional<int64_t>(batch) : std::nullopt);
    } catch (const Error& e) {
      j.fail("gpus", "= " + std::to_string(gpus) + (batch > 0 ? " (global_batch " + std::to_string(batch) + ")" : "") +
                         " does not suit job '" + ref + "': " + e.what());
    }
    sj.start_s = j.get_double("start_s", 0, 0, 1e9);
    if (const int64_t it = j.get_int("iterations", 0, 0, 1000); it > 0) sj.job.options.iterations = it;
    sj.placement.gpus = gpus;
    sj.placement.policy = j.get_enum("placement", topology::kPlacementPolicyNames, topology::PlacementPolicy::Linear);
    sj.placement.seed = static_cast<uint64_t>(j.get_int("placement_seed", 1, 0));
    j.finish();
    s.jobs.push_back(std::move(sj));
  }
  t.finish();
  return s;
}

} // namespace twinscale::config
