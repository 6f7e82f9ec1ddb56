// A parameter study: a base job and cluster, the axes to vary, how points are drawn
// (grid, seeded random sample, Latin hypercube), the filters and what each point runs.
// Plain structs; the study file's keys are described once in study/study_keys.cpp (the
// reader study/study_file.cpp and the reference docs/keys.md walk that table), its axes in
// study/axes.cpp.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "common/enum_names.hpp"

namespace twinscale::study {

/// One value of an axis: an integer, a number, a boolean or a string.
using Value = std::variant<int64_t, double, bool, std::string>;

/// "8", "2.5", "true", "tor-aware": the value as written in tables and CSV.
std::string to_text(const Value& v);

enum class SampleMethod : uint8_t { Grid, Random, LatinHypercube };
enum class Evaluation : uint8_t { Lower, Memory, Simulate, Campaign };
enum class SimModeChoice : uint8_t { Analytic, Flow };
inline constexpr EnumNames<SampleMethod, 3> kSampleMethodNames{
    {{"grid", SampleMethod::Grid}, {"random", SampleMethod::Random}, {"lhs", SampleMethod::LatinHypercube}}};
inline constexpr EnumNames<Evaluation, 4> kEvaluationNames{{{"lower", Evaluation::Lower},
                                                            {"memory", Evaluation::Memory},
                                                            {"simulate", Evaluation::Simulate},
                                                            {"campaign", Evaluation::Campaign}}};
inline constexpr EnumNames<SimModeChoice, 2> kSimModeChoiceNames{
    {{"analytic", SimModeChoice::Analytic}, {"flow", SimModeChoice::Flow}}};

/// The most points one study may hold, however they are drawn: a grid's product of axis
/// sizes and a random or Latin-hypercube sample's `points` alike. Each point is held in
/// memory (and its draw costs memory too), so a larger study is refused up front, naming
/// the figure, instead of growing until the machine runs out.
inline constexpr int64_t kMaxStudyPoints = 10'000'000;

struct Axis {
  std::string name;          // a short axis ("tp") or "job.KEY" / "cluster.KEY" (study/axes.hpp)
  std::vector<Value> values; // in the order written; duplicates rejected
};

struct StudySpec {
  std::string file; // the study file (for messages)
  std::string name;
  // [base]
  std::string job;          // job preset name or job file
  std::string cluster;      // "" = the job's cluster
  int64_t gpus = 0;         // 0 = the job's
  int64_t global_batch = 0; // 0 = the job's
  std::string placement = "linear";
  uint64_t seed = 1; // simulator seed (ECMP hashing, random placement)
  // [sample]
  SampleMethod method = SampleMethod::Grid;
  int64_t points = 0; // random / lhs: points drawn
  uint64_t sample_seed = 1;
  // [axes], in canonical order (study/axes.hpp: short axes, then job keys, then cluster keys)
  std::vector<Axis> axes;
  // [filters]
  bool memory_fits = true; // a point whose largest stage does not fit the GPU is infeasible
  // [evaluate]
  Evaluation evaluation = Evaluation::Simulate;
  SimModeChoice mode = SimModeChoice::Analytic;
  int64_t flow_best = 0; // analytic study: re-simulate the best K points in flow mode
  // [campaign] (what = "campaign")
  std::string faults = "llama3-405b"; // fault model preset or file
  std::string recovery = "megascale"; // recovery + checkpoint policy preset or file
  double days = 28;
  int64_t seeds = 4;
  uint64_t campaign_seed = 1;
};

} // namespace twinscale::study
