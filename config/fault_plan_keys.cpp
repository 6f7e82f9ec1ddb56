#include "config/fault_plan_keys.hpp"

#include <string>
#include <type_traits>

#include "config/fault_file_keys.hpp"

namespace twinscale::config {

namespace {
using faults::FaultPlan;
using faults::PlanEvent;
using faults::PlanEventKind;

/// The event being read: the plan's last (a plan without events: a default event, for the
/// reference's defaults).
const PlanEvent& last_event(const FaultPlan& p) {
  static const PlanEvent none;
  return p.events.empty() ? none : p.events.back();
}
PlanEvent& last_event(FaultPlan& p) {
  if (p.events.empty()) p.events.emplace_back();
  return p.events.back();
}

/// A key of an [[event]] entry stored in the member M of its PlanEvent.
template <auto M>
PlanKey event_member(std::string key) {
  using T = std::remove_cvref_t<decltype(std::declval<PlanEvent&>().*M)>;
  PlanKey f;
  f.key = std::move(key);
  f.type = twinscale::detail::key_type_of<T>();
  f.get = [](const FaultPlan& p) { return KeyValue(last_event(p).*M); };
  f.set = [](FaultPlan& p, const KeyValue& v) { last_event(p).*M = std::get<T>(v); };
  return f;
}

PlanKey event_kind() {
  PlanKey f;
  f.key = "event.kind";
  f.type = KeyType::Name;
  f.names = enum_names_vector(faults::kPlanEventKindNames);
  f.get = [](const FaultPlan& p) {
    return KeyValue(std::string(enum_name(faults::kPlanEventKindNames, last_event(p).kind)));
  };
  f.set = [](FaultPlan& p, const KeyValue& v) {
    last_event(p).kind = *enum_from_name(faults::kPlanEventKindNames, std::get<std::string>(v));
  };
  return f;
}

PlanKey event_seed() {
  PlanKey f;
  f.key = "event.seed";
  f.type = KeyType::Integer;
  f.get = [](const FaultPlan& p) { return KeyValue(static_cast<int64_t>(last_event(p).seed)); };
  f.set = [](FaultPlan& p, const KeyValue& v) { last_event(p).seed = static_cast<uint64_t>(std::get<int64_t>(v)); };
  return f;
}

PlanEventKind kind_of(const FaultPlan& p) { return last_event(p).kind; }
bool on_link(const FaultPlan& p) {
  const PlanEventKind k = kind_of(p);
  return k == PlanEventKind::LinkFlap || k == PlanEventKind::LinkDown || k == PlanEventKind::LinkDegraded;
}
bool on_gpu(const FaultPlan& p) {
  return kind_of(p) == PlanEventKind::GpuSlowdown || kind_of(p) == PlanEventKind::Jitter;
}
bool on_server(const FaultPlan& p) { return kind_of(p) == PlanEventKind::ServerCrash; }
bool has_end(const FaultPlan& p) { return kind_of(p) != PlanEventKind::ServerCrash; }
bool is_slowdown(const FaultPlan& p) { return kind_of(p) == PlanEventKind::GpuSlowdown; }
bool is_degraded(const FaultPlan& p) { return kind_of(p) == PlanEventKind::LinkDegraded; }
bool is_jitter(const FaultPlan& p) { return kind_of(p) == PlanEventKind::Jitter; }

const char* const kOtherKind = "is a key of other event kinds";

void target_keys(std::vector<PlanKey>& k) {
  k.push_back(event_kind().must_be_given().says(
      "what happens: a link flaps (out for duration_s, then back) or goes down (until until_s; for good "
      "without), a GPU computes slower, a server crashes (for good), a link runs at a fraction of its "
      "bandwidth, or a GPU's rank pauses at random (jitter)"));
  k.push_back(event_member<&PlanEvent::target>("event.link")
                  .must_be_given()
                  .only_when(on_link, "kind = \"link-flap\", \"link-down\" or \"link-degraded\"", kOtherKind)
                  .says("the link, by its fabric name (`twinscale topology show --json`)"));
  k.push_back(event_member<&PlanEvent::target>("event.gpu")
                  .must_be_given()
                  .only_when(on_gpu, "kind = \"gpu-slowdown\" or \"jitter\"", kOtherKind)
                  .says("the GPU, by its fabric name (\"server2.gpu3\")"));
  k.push_back(event_member<&PlanEvent::target>("event.server")
                  .must_be_given()
                  .only_when(on_server, "kind = \"server-crash\"", kOtherKind)
                  .says("the server, by its fabric name (\"server1\")"));
}

void time_keys(std::vector<PlanKey>& k) {
  k.push_back(event_member<&PlanEvent::at_s>("event.at_s")
                  .range_number(0, 1e300)
                  .in("s")
                  .read_by_hand()
                  .default_is("0 with link-degraded and jitter (the whole run); required otherwise")
                  .says("start, seconds of simulated time from the start of the run"));
  k.push_back(event_member<&PlanEvent::until_s>("event.until_s")
                  .in("s")
                  .read_by_hand()
                  .default_is("∞ (to the end of the run); a link flap needs until_s or duration_s")
                  .only_when(has_end, "kind ≠ \"server-crash\"", kOtherKind)
                  .says("end (exclusive), seconds from the start of the run; give until_s or duration_s, not both"));
  PlanKey duration;
  duration.key = "event.duration_s";
  duration.type = KeyType::Number;
  k.push_back(duration.range_number(1e-9, 1e300)
                  .in("s")
                  .read_by_hand()
                  .default_is("—")
                  .only_when(has_end, "kind ≠ \"server-crash\"", kOtherKind)
                  .says("length: the event ends at at_s + duration_s"));
}

void effect_keys(std::vector<PlanKey>& k) {
  k.push_back(event_member<&PlanEvent::slowdown>("event.slowdown")
                  .must_be_given()
                  .values_are("number in (0, 1)")
                  .only_when(is_slowdown, "kind = \"gpu-slowdown\"", kOtherKind)
                  .says("fraction of compute speed lost (0.1: compute ops take 1/0.9 as long; communication "
                        "is unaffected)"));
  k.push_back(event_member<&PlanEvent::bandwidth_factor>("event.bandwidth_factor")
                  .must_be_given()
                  .range_number(1e-6, 0.999999)
                  .only_when(is_degraded, "kind = \"link-degraded\"", kOtherKind)
                  .says("the fraction of its bandwidth the link keeps (a cable or optic renegotiated to a lower "
                        "rate)"));
  k.push_back(event_member<&PlanEvent::probability>("event.probability")
                  .must_be_given()
                  .range_number(1e-9, 1)
                  .only_when(is_jitter, "kind = \"jitter\"", kOtherKind)
                  .says("chance per iteration that one of the rank's compute ops, drawn uniformly, pauses"));
  k.push_back(event_member<&PlanEvent::delay_s>("event.delay_s")
                  .must_be_given()
                  .range_number(1e-9, 3600)
                  .in("s")
                  .only_when(is_jitter, "kind = \"jitter\"", kOtherKind)
                  .says("length of one pause"));
  k.push_back(event_seed()
                  .range(0)
                  .only_when(is_jitter, "kind = \"jitter\"", kOtherKind)
                  .says("seed of the draws (with the GPU and the iteration: same plan, same pauses)"));
}

std::vector<PlanKey> make_keys() {
  std::vector<PlanKey> k;
  add_retransmit_keys<FaultPlan, &FaultPlan::retransmit>(k);
  target_keys(k);
  time_keys(k);
  effect_keys(k);
  return k;
}
} // namespace

const std::vector<PlanKey>& fault_plan_keys() {
  static const std::vector<PlanKey> keys = make_keys();
  return keys;
}

const std::vector<KeySection>& fault_plan_sections() {
  static const std::vector<KeySection> sections = {
      {"retransmit", "retransmit", false, false,
       "NCCL's RDMA retransmission (M13): a link outage no longer than timeout × retries stalls the flows that "
       "cross it, a longer one fails the collective and the job. Recovery files take the same table."},
      {"event", "event", false, false,
       "An array of tables: one [[event]] per event, in any order. `kind` decides which other keys an event "
       "takes; a key of another kind is refused as unknown. Names are resolved against the cluster's fabric "
       "when the run starts."},
  };
  return sections;
}

} // namespace twinscale::config
