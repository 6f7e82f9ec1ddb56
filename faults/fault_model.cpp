#include "faults/fault_model.hpp"

#include <cmath>

#include "faults/error.hpp"

namespace twinscale::faults {

double FaultModel::interrupt_rate_per_hour(int64_t gpus) const {
  double sum = 0;
  for (size_t i = 0; i < categories.size(); ++i)
    if (categories[i].effect == FaultEffect::Interrupt) sum += cluster_rate_per_hour(i, gpus);
  return sum;
}

namespace {
[[noreturn]] void fail(const FaultModel& m, const FaultCategorySpec* c, const std::string& field,
                       const std::string& why) {
  std::string where = "fault model '" + m.name + "'";
  if (c) where += ", category '" + c->name + "' (" + to_string(c->category) + ")";
  throw FaultError(where + ": " + field + " " + why);
}
} // namespace

void validate_model(const FaultModel& m) {
  if (m.categories.empty()) fail(m, nullptr, "categories", "is empty; a model needs at least one category");
  if (m.inter_arrival == InterArrival::Weibull && !(m.weibull_shape > 0 && std::isfinite(m.weibull_shape)))
    fail(m, nullptr, "weibull_shape", "must be > 0 (1 = exponential, < 1 = decreasing hazard)");
  if (m.gpus_per_node < 1) fail(m, nullptr, "gpus_per_node", "must be ≥ 1");
  for (const auto& c : m.categories) {
    if (!(c.rate_per_gpu_hour > 0) || !std::isfinite(c.rate_per_gpu_hour))
      fail(m, &c, "rate", "must be > 0 (a category that never happens should be left out)");
    if (!(c.diagnosable >= 0 && c.diagnosable <= 1)) fail(m, &c, "diagnosable", "must be a probability in [0, 1]");
    if (!(c.duration_s >= 0) || !std::isfinite(c.duration_s))
      fail(m, &c, "duration_s", "must be a finite number of seconds ≥ 0");
    switch (c.effect) {
    case FaultEffect::Interrupt:
      if (c.slowdown != 0) fail(m, &c, "slowdown", "applies only to effect = \"slowdown\"");
      break;
    case FaultEffect::Outage:
      if (!(c.duration_s > 0)) fail(m, &c, "duration_s", "must be > 0 for an outage (how long the link is out)");
      if (c.slowdown != 0) fail(m, &c, "slowdown", "applies only to effect = \"slowdown\"");
      break;
    case FaultEffect::Slowdown:
      if (!(c.duration_s > 0)) fail(m, &c, "duration_s", "must be > 0 for a slowdown (how long it lasts)");
      if (!(c.slowdown > 0 && c.slowdown < 1))
        fail(m, &c, "slowdown", "must be a fraction of speed lost in (0, 1), e.g. 0.1");
      break;
    }
  }
}

FaultModel exponential_model(double mtbf_s, int64_t gpus) {
  if (!(mtbf_s > 0) || gpus < 1) throw FaultError("exponential fault model: MTBF must be > 0 s and GPUs ≥ 1");
  FaultModel m;
  m.name = "exponential";
  m.source = "textbook: exponential inter-arrival, MTBF given";
  FaultCategorySpec c;
  c.category = FaultCategory::Other;
  c.name = "failure";
  c.rate_per_gpu_hour = 3600.0 / mtbf_s / static_cast<double>(gpus);
  c.scope = FaultScope::Software;
  c.effect = FaultEffect::Interrupt;
  c.detection = DetectionSignal::ExplicitError;
  c.needs_eviction = false;
  c.diagnosable = 0;
  m.categories.push_back(c);
  return m;
}

// string_views of the tables' literals: NUL-terminated
const char* to_string(FaultCategory c) { return enum_name(kFaultCategoryNames, c).data(); }
const char* to_string(DetectionSignal s) { return enum_name(kDetectionSignalNames, s).data(); }
const char* to_string(FaultScope s) { return enum_name(kFaultScopeNames, s).data(); }
const char* to_string(FaultEffect e) { return enum_name(kFaultEffectNames, e).data(); }
const char* to_string(InterArrival a) { return enum_name(kInterArrivalNames, a).data(); }

} // namespace twinscale::faults
