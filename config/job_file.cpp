// Job files (TOML) → schedules::JobSpec. Every key — type, unit, range, default, meaning —
// is described once in the job's key table (schedules/job_keys.cpp; reference: docs/keys.md)
// and read through it (config/key_table_reader.hpp); this file adds what spans keys: the
// gpus/dp derivation, the software stack under the job's keys, ep_node with the hierarchical
// all-to-all, and TP overlap needing chunks.
#include "config/job_file.hpp"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/did_you_mean.hpp"
#include "config/key_table_reader.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/job_keys.hpp"
#include "schedules/limits.hpp"

namespace twinscale::config {

namespace s = twinscale::schedules;

namespace {
/// tp·pp, refused (naming `where`) past kMaxRanks rather than overflowing.
std::string replica_name(const s::ParallelSpec& p) { return p.cp > 1 ? "tp·pp·cp" : "tp·pp"; }

int64_t ranks_per_replica(const s::ParallelSpec& p, const std::string& where) {
  const int64_t n = s::saturating_mul(s::saturating_mul(p.tp, p.pp), p.cp);
  if (n > s::kMaxRanks)
    throw ConfigError(where + ": parallel.tp·pp·cp = " + std::to_string(p.tp) + "·" + std::to_string(p.pp) + "·" +
                      std::to_string(p.cp) + " is more than " + std::to_string(s::kMaxRanks) +
                      " ranks (2^20, 8× the largest modelled cluster)");
  return n;
}

/// Reads the software stack `ref` (a preset of presets/software/, or with
/// `document_path` a file in the job's folder) into `opt`. A stack states only stack
/// facts: [schedule] (with [schedule.overlap] and [schedule.operators]) and [precision]
/// keys that describe the software, never the job's own choices (pipeline, recompute…).
void apply_software(const std::string& ref, const std::string& job_file, const std::string* document_path,
                    s::JobSpec& job) {
  std::string text, name;
  const auto presets = preset_names("software");
  if (std::find(presets.begin(), presets.end(), ref) != presets.end()) {
    text = std::string(preset_text("software", ref));
    name = "software preset " + ref;
  } else if (document_path != nullptr) {
    const std::string path = resolve_document_reference(*document_path, ref, "software", "software");
    text = read_config_file(path, "software file");
    name = path;
  } else {
    std::string valid;
    for (const auto& n : presets) valid += (valid.empty() ? "" : ", ") + n;
    throw ConfigError(job_file + ": key 'software' = \"" + ref + "\" is not a software preset; valid: " + valid);
  }
  const toml::table root = parse_toml(text, name);
  TableReader top(root, name);
  top.get_string("name");
  top.get_string("description", std::string());
  for (const char* section : {"schedule", "precision"}) {
    TableReader t = top.table(section);
    read_section(t, section, s::job_sections(), s::job_keys(), job, /*stack_only=*/true);
    t.finish();
  }
  top.finish();
}
} // namespace

namespace {
/// " Did you mean 'parallel.tp'?": job keys ending in `key` ("tp" → parallel.tp,
/// schedule.overlap.tp), else the nearest within two edits; "" when none.
std::string job_key_hint(const std::string& key) {
  std::vector<std::string> keys, ending;
  for (const s::JobKey& f : s::job_keys()) {
    if (f.key.empty()) continue;
    keys.push_back(f.key);
    if (f.key.size() > key.size() && f.key.ends_with("." + key)) ending.push_back(f.key);
  }
  if (ending.empty())
    if (std::string near = nearest_name(keys, key).value_or(""); !near.empty()) ending.push_back(near);
  std::string out;
  for (const auto& k : ending) out += (out.empty() ? "; did you mean '" : "' or '") + k;
  return out.empty() ? out : out + "'?";
}

/// The job's --set overrides checked against the key table: the key must be a key of job
/// files, a key that takes text reads a bare VALUE as text, and VALUE must be of the key's
/// type (its range is checked as the file's own keys are). A key below a key that holds a
/// value is left to apply_key_overrides, which names it.
std::vector<KeyOverride> checked_job_overrides(const std::vector<KeyOverride>& set) {
  std::vector<KeyOverride> out;
  for (KeyOverride o : set) {
    const std::string key = o.key();
    const s::JobKey* f = s::find_job_key(key);
    if (f == nullptr) {
      bool below_value = false;
      for (size_t dot = key.find('.'); dot != std::string::npos && !below_value; dot = key.find('.', dot + 1))
        below_value = s::find_job_key(key.substr(0, dot)) != nullptr;
      if (!below_value)
        throw ConfigError("--set " + o.text + ": unknown key '" + key + "'" + job_key_hint(key) +
                          " (docs/keys.md lists every job key)");
      out.push_back(std::move(o));
      continue;
    }
    o.takes_text = f->type == KeyType::String || (f->type == KeyType::Name && !f->accepts_bool);
    const toml::table v = override_value(o);
    const toml::node& n = *v.get("v");
    bool fits = false;
    switch (f->type) {
    case KeyType::Integer: fits = n.is_integer(); break;
    case KeyType::Number: fits = n.is_number(); break;
    case KeyType::Boolean: fits = n.is_boolean(); break;
    case KeyType::String:
    case KeyType::Name: fits = n.is_string() || (f->accepts_bool && n.is_boolean()); break;
    }
    if (!fits) throw ConfigError("--set " + o.text + ": key '" + key + "' takes " + key_range_text(*f));
    out.push_back(std::move(o));
  }
  return out;
}
} // namespace

std::string JobEdits::note() const {
  std::vector<std::string> parts;
  if (gpus) parts.push_back("--gpus " + std::to_string(*gpus));
  if (global_batch) parts.push_back("--global-batch " + std::to_string(*global_batch));
  for (const KeyOverride& o : set) parts.push_back("--set " + o.text);
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? " (with " : ", ") + p;
  return out.empty() ? out : out + ")";
}

void JobEdits::apply(toml::table& doc) const {
  apply_key_overrides(doc, checked_job_overrides(set));
  if (gpus) {
    doc.insert_or_assign("gpus", *gpus);
    if (toml::table* par = doc["parallel"].as_table()) par->erase("dp"); // re-derived from gpus
  }
  if (global_batch) {
    if (!doc["parallel"].is_table()) doc.insert_or_assign("parallel", toml::table{});
    doc["parallel"].as_table()->insert_or_assign("global_batch", *global_batch);
  }
}

namespace {
/// [parallel]: the table's keys, then dp (given, or derived from the top-level gpus) and
/// ep_node, which the hierarchical all-to-all needs.
void read_parallel(TableReader& top, s::JobSpec& job, std::optional<int64_t> gpus, const std::string& file) {
  TableReader p = top.table("parallel", true);
  read_section(p, "parallel", s::job_sections(), s::job_keys(), job);
  auto& par = job.parallel;
  if (par.ep_a2a == s::EpAllToAll::Hierarchical && !p.has("ep_node"))
    p.fail("ep_node", "is missing; ep_a2a = \"hierarchical\" needs the EP ranks per NVLink domain "
                      "(gpus per server / tp, at most ep)");
  if (p.has("dp")) {
    par.dp = p.get_int("dp", std::nullopt, 1);
    const int64_t product = s::saturating_mul(s::saturating_mul(s::saturating_mul(par.tp, par.pp), par.dp), par.cp);
    if (gpus && *gpus != product)
      top.fail("gpus", "is " + std::to_string(*gpus) + " but tp·pp·dp·cp = " + std::to_string(par.tp) + "·" +
                           std::to_string(par.pp) + "·" + std::to_string(par.dp) + "·" + std::to_string(par.cp) +
                           " = " + std::to_string(product) + "; make them agree or omit parallel.dp");
  } else {
    if (!gpus)
      p.fail("dp", "is missing; give parallel.dp or a top-level gpus from which dp = "
                   "gpus / (tp·pp) is derived");
    const int64_t per_replica = ranks_per_replica(par, file);
    if (*gpus % per_replica != 0)
      top.fail("gpus", "is " + std::to_string(*gpus) + ", not a multiple of " + replica_name(par) + " = " +
                           std::to_string(per_replica) + "; dp = gpus / (" + replica_name(par) + ") must be whole");
    par.dp = *gpus / per_replica;
  }
  p.finish();
}
} // namespace

s::JobSpec parse_job(std::string_view text, const std::string& file_name, const std::string* document_path,
                     const JobEdits& edits) {
  const std::string file = file_name + edits.note();
  toml::table root = parse_toml(text, file_name);
  edits.apply(root);
  TableReader top(root, file);
  s::JobSpec job;
  const auto& keys = s::job_keys();
  const auto& sections = s::job_sections();
  read_keys(top, "", keys, job); // name, cluster, software
  std::optional<int64_t> gpus;
  if (top.has("gpus")) gpus = top.get_int("gpus", std::nullopt, 1);

  TableReader m = top.table("model", true);
  read_section(m, "model", sections, keys, job);
  m.finish();
  job.model.name = job.name;
  // 0 means 4·hidden; saturated so that a huge hidden is reported as such by check_job
  if (job.model.ffn_hidden == 0) job.model.ffn_hidden = s::saturating_mul(4, job.model.hidden);
  read_parallel(top, job, gpus, file);

  // The software stack's facts first (its own file named in its messages), then the
  // job's keys over them.
  if (top.has("software")) {
    apply_software(job.software, file, document_path, job);
  }
  TableReader sc = top.table("schedule");
  read_section(sc, "schedule", sections, keys, job);
  sc.finish();
  // TP overlap splits each GEMM and its collective into tp_chunks pieces: with one piece
  // there is nothing to overlap, and the key would silently do nothing.
  const auto& opt = job.options;
  if (opt.overlap.tp && opt.overlap.tp_chunks <= 1)
    sc.fail("overlap.tp", "is true but schedule.overlap.tp_chunks is " + std::to_string(opt.overlap.tp_chunks) +
                              ": TP overlap chunks each GEMM against its collective, so it needs tp_chunks ≥ 2; "
                              "set schedule.overlap.tp_chunks (the megascale stack uses 4) or tp = false");
  TableReader pr = top.table("precision");
  read_section(pr, "precision", sections, keys, job);
  pr.finish();
  top.finish();

  try {
    s::check_job(job);
  } catch (const s::JobError& e) {
    throw s::JobError(file + ": " + e.what());
  }
  return job;
}

s::JobSpec load_job(const std::string& path, const JobEdits& edits) {
  s::JobSpec job = parse_job(read_config_file(path, "job file"), path, &path, edits);
  job.cluster = resolve_document_reference(path, job.cluster, "cluster", "clusters");
  return job;
}

s::JobSpec load_job_preset(const std::string& name, const JobEdits& edits) {
  return parse_job(preset_text("jobs", name), "preset " + name, nullptr, edits);
}

void apply_overrides(s::JobSpec& job, std::optional<int64_t> gpus, std::optional<int64_t> global_batch) {
  if (gpus) {
    if (*gpus < 1) throw ConfigError("--gpus is " + std::to_string(*gpus) + "; must be ≥ 1");
    const int64_t per_replica = ranks_per_replica(job.parallel, "job " + job.name);
    if (*gpus % per_replica != 0)
      throw ConfigError("--gpus " + std::to_string(*gpus) + " is not a multiple of " + replica_name(job.parallel) +
                        " = " + std::to_string(per_replica) + " (job " + job.name + "); dp = gpus / (" +
                        replica_name(job.parallel) + ") must be whole");
    job.parallel.dp = *gpus / per_replica;
  }
  if (global_batch) {
    if (*global_batch < 1) throw ConfigError("--global-batch is " + std::to_string(*global_batch) + "; must be ≥ 1");
    job.parallel.global_batch = *global_batch;
  }
  try {
    s::check_job(job);
  } catch (const s::JobError& e) {
    std::string given;
    if (gpus) given += "--gpus " + std::to_string(*gpus) + " (dp = " + std::to_string(job.parallel.dp) + ")";
    if (global_batch)
      given += std::string(given.empty() ? "" : ", ") + "--global-batch " + std::to_string(*global_batch);
    throw s::JobError(given.empty() ? std::string(e.what()) : "with " + given + ": " + e.what());
  }
}

} // namespace twinscale::config
