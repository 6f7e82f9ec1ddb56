#include "study/study_keys.hpp"

#include "common/key_reference.hpp"
#include "study/axes.hpp"
#include "topology/placement.hpp"

namespace twinscale::study {

namespace {
using S = StudySpec;

/// A seed: an integer ≥ 0 in a uint64_t member.
template <uint64_t S::*M>
StudyKey seed_key(std::string key) {
  StudyKey f;
  f.key = std::move(key);
  f.type = KeyType::Integer;
  f.int_min = 0;
  f.get = [](const S& s) { return KeyValue(static_cast<int64_t>(s.*M)); };
  f.set = [](S& s, const KeyValue& v) { s.*M = static_cast<uint64_t>(std::get<int64_t>(v)); };
  return f;
}

/// A name kept as the string itself (one of `names`).
template <std::string S::*M>
StudyKey name_key(std::string key, std::vector<std::string> names) {
  StudyKey f = member<S, M>(std::move(key));
  f.type = KeyType::Name;
  f.names = std::move(names);
  return f;
}

void base_keys(std::vector<StudyKey>& k) {
  k.push_back(member<S, &S::name>("name").must_be_given().says("labels the results store; not empty"));
  k.push_back(member<S, &S::job>("base.job")
                  .must_be_given()
                  .says("the job every point starts from: a job preset or a job file (beside the study file)"));
  k.push_back(member<S, &S::cluster>("base.cluster")
                  .default_is("the job's cluster")
                  .says("cluster preset or file (beside the study file)"));
  k.push_back(member<S, &S::gpus>("base.gpus").range(0).says("total GPUs, dp = gpus / (tp·cp·pp); 0 = the job's"));
  k.push_back(member<S, &S::global_batch>("base.global_batch")
                  .range(0)
                  .in("sequences")
                  .says("sequences per iteration; 0 = the job's"));
  k.push_back(name_key<&S::placement>("base.placement", enum_names_vector(topology::kPlacementPolicyNames))
                  .says("placement of ranks on the servers"));
  k.push_back(seed_key<&S::seed>("base.seed").says("simulator seed (ECMP hashing, random placement)"));
}

void sample_keys(std::vector<StudyKey>& k) {
  k.push_back(choice<S, &S::method>("sample.method", kSampleMethodNames)
                  .says("grid: every combination of the axes' values; random: `points` distinct combinations "
                        "drawn uniformly without replacement; lhs: a Latin hypercube of `points` rows (each "
                        "axis' values stratified, duplicates dropped)"));
  k.push_back(member<S, &S::points>("sample.points")
                  .range(1, kMaxStudyPoints)
                  .read_by_hand()
                  .default_is("required with random and lhs")
                  .says("points drawn (random, lhs); a grid takes none"));
  k.push_back(seed_key<&S::sample_seed>("sample.seed").says("seed of the sampler (same seed, same points)"));
}

void evaluate_keys(std::vector<StudyKey>& k) {
  k.push_back(member<S, &S::memory_fits>("filters.memory_fits")
                  .says("a point whose largest pipeline stage needs more than the GPU's memory is infeasible (not "
                        "simulated); false: memory is reported, not enforced. Divisibility is always enforced"));
  k.push_back(choice<S, &S::evaluation>("evaluate.what", kEvaluationNames)
                  .says("what each feasible point runs: lower (the schedule), memory (the estimate only), simulate "
                        "(one iteration), campaign (one iteration, then weeks of training under faults: ETTR)"));
  k.push_back(choice<S, &S::mode>("evaluate.mode", kSimModeChoiceNames).says("simulation mode (simulate, campaign)"));
  k.push_back(member<S, &S::flow_best>("evaluate.flow_best")
                  .range(0, 1'000'000)
                  .says("after an analytic study, simulate the best K points (by analytic MFU) again in flow mode; "
                        "needs what = \"simulate\" and mode = \"analytic\""));
}

void campaign_keys(std::vector<StudyKey>& k) {
  k.push_back(member<S, &S::faults>("campaign.faults").says("fault model: preset or TOML file"));
  k.push_back(member<S, &S::recovery>("campaign.recovery").says("recovery and checkpoint policy: preset or TOML file"));
  k.push_back(member<S, &S::days>("campaign.days").range_number(1e-6, 36500).in("days").says("wall time per seed"));
  k.push_back(member<S, &S::seeds>("campaign.seeds").range(1, 1000).says("independent runs (ETTR mean and 95 % CI)"));
  k.push_back(seed_key<&S::campaign_seed>("campaign.seed").says("first seed"));
}

/// The [axes] part of the reference: the short axes, then the job. and cluster. keys.
std::string axes_markdown() {
  std::string out = "\n### [axes]\n\nThe axes to vary, at least one; each an array of distinct values, applied on "
                    "top of [base] (points list them in this order). Required.\n\n"
                    "| axis | type and values | unit | sets | meaning |\n|---|---|---|---|---|\n";
  for (const AxisDef& d : short_axes()) {
    const std::string sets = d.job_key       ? "`job." + d.job_key->key + "`"
                             : d.cluster_key ? "`cluster." + d.cluster_key->key + "`"
                                             : "the study's own";
    std::string doc = d.values.doc;
    if (d.name == "nics") doc += "; the rails become min(rails, nics)";
    if (d.name == "pipeline") doc += "; without this axis a point with vpp > 1 is interleaved";
    out += "| `" + d.name + "` | " + detail::markdown_cell(key_range_text(d.values)) + " | " + d.values.unit + " | " +
           sets + " | " + detail::markdown_cell(doc) + " |\n";
  }
  out += "\nEvery other key of the job and cluster tables above is an axis too, written as a quoted key "
         "`\"job.KEY\"` or `\"cluster.KEY\"` (`\"job.model.layers\" = [24, 32]`, `\"cluster.switch.radix\" = "
         "[32, 64]`), its values checked as the file's; the long name of a short axis (`\"job.parallel.tp\"`) is "
         "that axis. Not axes: `job.parallel.dp` (derived), `job.cluster` and `job.software` (other files: use "
         "the axes job and cluster), `cluster.gpus` (use gpus), `cluster.fabric.oversubscription` and "
         "`cluster.gpu_groups.*` (arrays: use oversubscription, or the axis cluster). A job key is set on the point's "
         "job and a cluster key on its cluster variant through the key's own setter, as a file stating it would "
         "set it, except the catalogue models (`cluster.gpu.model`, `cluster.server.nic`, `cluster.switch.model`), "
         "made to the cluster document before it is read so that the model's figures come with them; a job key "
         "set where it means nothing (`job.model.top_k` of a dense model) makes the point infeasible.\n";
  return out;
}

} // namespace

const std::vector<StudyKey>& study_keys() {
  static const std::vector<StudyKey> keys = [] {
    std::vector<StudyKey> k;
    base_keys(k);
    sample_keys(k);
    evaluate_keys(k);
    campaign_keys(k);
    for (StudyKey& f : k) f.json_key.clear(); // study files only: no JSON form
    return k;
  }();
  return keys;
}

const std::vector<KeySection>& study_sections() {
  static const std::vector<KeySection> sections = {
      {"", "", false, false, "The study's name."},
      {"base", "", true, false, "The job and cluster every point starts from."},
      {"sample", "", false, false, "How points are drawn from the axes."},
      {"axes", "", true, false, "The axes (below)."},
      {"filters", "", false, false, "Which points are run."},
      {"evaluate", "", false, false, "What each feasible point runs."},
      {"campaign", "", false, false,
       "For what = \"campaign\", as `twinscale campaign`; refused with any other evaluation."},
  };
  return sections;
}

std::string study_keys_markdown() {
  std::vector<KeySection> keyed; // [axes] is rendered from the axes, not the key table
  for (const KeySection& s : study_sections())
    if (s.key != "axes") keyed.push_back(s);
  std::string out = key_reference_markdown(
      "Study files",
      "A study file (TOML, `twinscale sweep STUDY.toml`; example: examples/study.toml) varies axes over a base "
      "job and cluster and stores one row per point.",
      keyed, study_keys());
  const auto at = out.find("\n### [filters]");
  return out.insert(at == std::string::npos ? out.size() : at, axes_markdown());
}

} // namespace twinscale::study
