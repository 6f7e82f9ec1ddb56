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

const char* to_string(FaultCategory c) {
  switch (c) {
  case FaultCategory::Gpu: return "gpu";
  case FaultCategory::Hbm: return "hbm";
  case FaultCategory::GpuSram: return "gpu-sram";
  case FaultCategory::GpuSystemProcessor: return "gpu-system-processor";
  case FaultCategory::GpuThermal: return "gpu-thermal";
  case FaultCategory::Nic: return "nic";
  case FaultCategory::SwitchCable: return "switch-cable";
  case FaultCategory::Host: return "host";
  case FaultCategory::SoftwareBug: return "software-bug";
  case FaultCategory::NcclWatchdog: return "nccl-watchdog";
  case FaultCategory::SilentDataCorruption: return "silent-data-corruption";
  case FaultCategory::LinkFlap: return "link-flap";
  case FaultCategory::Straggler: return "straggler";
  case FaultCategory::Other: return "other";
  }
  return "?";
}

const char* to_string(DetectionSignal s) {
  switch (s) {
  case DetectionSignal::ExplicitError: return "explicit-error";
  case DetectionSignal::MissedHeartbeat: return "missed-heartbeat";
  case DetectionSignal::TrafficDrop: return "traffic-drop";
  case DetectionSignal::None: return "none";
  }
  return "?";
}

const char* to_string(FaultScope s) {
  switch (s) {
  case FaultScope::Gpu: return "gpu";
  case FaultScope::Node: return "node";
  case FaultScope::Nic: return "nic";
  case FaultScope::Link: return "link";
  case FaultScope::Switch: return "switch";
  case FaultScope::Software: return "software";
  }
  return "?";
}

const char* to_string(FaultEffect e) {
  switch (e) {
  case FaultEffect::Interrupt: return "interrupt";
  case FaultEffect::Outage: return "outage";
  case FaultEffect::Slowdown: return "slowdown";
  }
  return "?";
}

const char* to_string(InterArrival a) {
  switch (a) {
  case InterArrival::Exponential: return "exponential";
  case InterArrival::Weibull: return "weibull";
  }
  return "?";
}

} // namespace twinscale::faults
