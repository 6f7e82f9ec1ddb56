// Study file format (TOML), `twinscale sweep STUDY.toml`: name, [base], [sample], [axes],
// [filters], [evaluate] and [campaign]. Every key, its type, range and default is described
// once in study/study_keys.cpp and every axis in study/axes.cpp; the reference is the
// "Study files" section of docs/keys.md (generated from both). This reader walks the key
// table section by section and reads by hand only the rules that span keys: sample.points
// (required for random and lhs, refused for a grid), flow_best's evaluation, the campaign
// settings' evaluation, the references to other files, and the axes.
#include "study/study_file.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "config/key_table_reader.hpp"
#include "config/presets.hpp"
#include "config/toml_reader.hpp"
#include "study/axes.hpp"
#include "study/study_keys.hpp"

namespace twinscale::study {

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

/// A job, cluster, fault or recovery reference under the path rule of every document that
/// names another (config::resolve_document_reference): a preset name stays as is, a file
/// must lie in the study file's folder (no "../", no absolute path elsewhere, no device).
std::string resolve(const std::string& file, const std::string& key, const std::string& ref, const std::string& kind) {
  return config::resolve_document_reference(file, ref, key, kind);
}

/// The [axes] table: each entry an axis (study/axes.hpp), in canonical order.
std::vector<Axis> read_axes(const toml::table& axes, const std::string& file) {
  std::vector<std::pair<AxisDef, Axis>> read;
  std::map<std::string, std::string> written; // axis → the spelling that named it
  for (auto&& [k, v] : axes) {
    const std::string name(k.str());
    std::string why;
    const std::optional<AxisDef> d = find_axis(name, why);
    if (!d) throw config::ConfigError(file + ": key '" + axis_key(name) + "' " + why);
    if (const auto [at, fresh] = written.emplace(d->name, name); !fresh)
      throw config::ConfigError(file + ": keys '" + axis_key(at->second) + "' and '" + axis_key(name) +
                                "' are the same axis (" + d->name + "); keep one");
    read.emplace_back(*d, read_axis(*d, name, v, file));
  }
  if (written.count("recompute") && written.count("job.schedule.recompute"))
    throw config::ConfigError(file + ": keys 'axes.recompute' and 'axes.\"job.schedule.recompute\"' both set the "
                                     "recomputation; keep one");
  std::sort(read.begin(), read.end(), [](const auto& a, const auto& b) { return a.first.rank < b.first.rank; });
  std::vector<Axis> out;
  for (auto& [d, a] : read) out.push_back(std::move(a));
  return out;
}

} // namespace

std::string to_text(const Value& v) {
  struct {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const {
      std::ostringstream o;
      o.precision(17);
      o << x;
      return o.str();
    }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return x; }
  } visit;
  return std::visit(visit, v);
}

namespace {

void read_base(config::TableReader& b, StudySpec& s) {
  config::read_keys(b, "base", study_keys(), s);
  s.job = resolve(s.file, "base.job", s.job, "jobs");
  s.cluster = resolve(s.file, "base.cluster", s.cluster, "clusters");
}

void read_sample(config::TableReader& sm, StudySpec& s) {
  config::read_keys(sm, "sample", study_keys(), s);
  const auto& points = *std::find_if(study_keys().begin(), study_keys().end(),
                                     [](const StudyKey& f) { return f.key == "sample.points"; });
  if (s.method == SampleMethod::Grid) {
    if (sm.has("points"))
      sm.fail("points", "is only for method = \"random\" or \"lhs\"; a grid takes every combination");
  } else {
    config::read_key(sm, points, s, true);
  }
}

void read_evaluate(config::TableReader& e, StudySpec& s) {
  config::read_keys(e, "evaluate", study_keys(), s);
  if (s.flow_best > 0 && (s.evaluation != Evaluation::Simulate || s.mode != SimModeChoice::Analytic))
    e.fail("flow_best",
           "needs what = \"simulate\" and mode = \"analytic\" (it re-simulates the best analytic points in flow mode)");
}

void read_campaign(config::TableReader& c, StudySpec& s) {
  config::read_keys(c, "campaign", study_keys(), s);
  s.faults = resolve(s.file, "campaign.faults", s.faults, "faults");
  s.recovery = resolve(s.file, "campaign.recovery", s.recovery, "recovery");
}

} // namespace

StudySpec parse_study(std::string_view text, const std::string& file) {
  const toml::table root = config::parse_toml(text, file);
  config::TableReader top(root, file);
  StudySpec s;
  s.file = file;
  config::read_keys(top, "", study_keys(), s);
  if (s.name.empty()) top.fail("name", "is empty; give the study a name");
  for (const KeySection& section : study_sections()) { // the key table's sections, in file order
    if (section.key.empty()) continue;
    if (section.key == "axes") {
      top.table("axes", true); // marks the key read; its entries are axes (study/axes.hpp)
      const toml::table* axes = root.get_as<toml::table>("axes");
      if (!axes) throw config::ConfigError(file + ": key 'axes' must be a table [axes]");
      s.axes = read_axes(*axes, file);
      if (s.axes.empty())
        throw config::ConfigError(file + ": key 'axes' has no axis; vary at least one of: " + join(short_axis_names()) +
                                  ", or any \"job.KEY\" / \"cluster.KEY\"");
      continue;
    }
    config::TableReader t = top.table(section.key, section.required);
    if (section.key == "base") read_base(t, s);
    if (section.key == "sample") read_sample(t, s);
    if (section.key == "filters") config::read_keys(t, "filters", study_keys(), s);
    if (section.key == "evaluate") read_evaluate(t, s);
    if (section.key == "campaign") read_campaign(t, s);
    t.finish();
  }
  const bool campaign_axis = std::any_of(s.axes.begin(), s.axes.end(), [](const Axis& a) {
    return a.name == "fault_rate_scale" || a.name == "checkpoint_interval_s";
  });
  if (s.evaluation != Evaluation::Campaign && (campaign_axis || top.has("campaign")))
    throw config::ConfigError(file + ": key 'evaluate.what' is not \"campaign\", but the study has campaign "
                                     "settings ([campaign], fault_rate_scale or checkpoint_interval_s); set what = "
                                     "\"campaign\" or remove them");
  top.finish();
  return s;
}

StudySpec load_study(const std::string& path) {
  return parse_study(config::read_config_file(path, "study file"), path); // a regular file of ≤ 4 MiB
}

} // namespace twinscale::study
