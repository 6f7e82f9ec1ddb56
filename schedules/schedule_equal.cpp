// schedules_equal (schedules/schedule_equal.hpp): two schedules that run the same programs.
#include "schedules/schedule_equal.hpp"

#include <algorithm>

#include "schedules/schedule_json.hpp"

namespace twinscale::schedules {

namespace {
namespace s = twinscale::schedules;

bool differ(std::string* why, const std::string& what) {
  if (why != nullptr) *why = what;
  return false;
}

/// The first field in which two ops differ, or "".
std::string op_difference(const s::Schedule& a, const s::Op& x, const s::Schedule& b, const s::Op& y) {
  if (x.kind != y.kind) return "kind";
  if (x.kernel != y.kernel) return "kernel";
  if (x.stream != y.stream) return "stream";
  if (x.dtype != y.dtype) return "dtype";
  if (x.group != y.group) return "group";
  if (x.priority != y.priority) return "priority";
  if (x.peer != y.peer) return "peer";
  if (x.flops != y.flops) return "flops";
  if (x.bytes != y.bytes) return "bytes";
  if (x.shape != y.shape) return "shape";
  if (x.labels.iteration != y.labels.iteration || x.labels.micro_batch != y.labels.micro_batch ||
      x.labels.chunk != y.labels.chunk || x.labels.layer != y.labels.layer || x.labels.phase != y.labels.phase)
    return "labels";
  auto name = [](const s::Schedule& sch, const s::Op& op) {
    return op.name < sch.names.size() ? sch.names[op.name] : std::string("#") + std::to_string(op.name);
  };
  if (name(a, x) != name(b, y)) return "name";
  return "";
}

} // namespace

bool schedules_equal(const s::Schedule& a, const s::Schedule& b, std::string* why) {
  if (a.version != b.version) return differ(why, "format version");
  if (a.layout.tp != b.layout.tp || a.layout.dp != b.layout.dp || a.layout.pp != b.layout.pp)
    return differ(why, "layout");
  if (s::job_to_json(a.job) != s::job_to_json(b.job)) return differ(why, "job");
  if (a.model_flops_per_iteration != b.model_flops_per_iteration) return differ(why, "model FLOPs per iteration");
  if (a.memory_by_stage.size() != b.memory_by_stage.size()) return differ(why, "memory estimate stages");
  for (size_t i = 0; i < a.memory_by_stage.size(); ++i) {
    const auto &x = a.memory_by_stage[i], &y = b.memory_by_stage[i];
    if (x.parameters_bytes != y.parameters_bytes || x.gradients_bytes != y.gradients_bytes ||
        x.optimizer_bytes != y.optimizer_bytes || x.activations_bytes != y.activations_bytes)
      return differ(why, "memory estimate of stage " + std::to_string(i));
  }
  for (int64_t r = 0; r < a.world(); ++r) {
    const s::Program &p = a.program(r), &q = b.program(r);
    const std::string at = "rank " + std::to_string(r);
    if (p.ops.size() != q.ops.size())
      return differ(why, at + ": " + std::to_string(p.ops.size()) + " vs " + std::to_string(q.ops.size()) + " ops");
    for (size_t i = 0; i < p.ops.size(); ++i) {
      const std::string field = op_difference(a, p.ops[i], b, q.ops[i]);
      if (!field.empty()) return differ(why, at + " op " + std::to_string(i) + ": " + field);
      const auto dx = p.deps_of(i), dy = q.deps_of(i);
      if (!std::equal(dx.begin(), dx.end(), dy.begin(), dy.end()))
        return differ(why, at + " op " + std::to_string(i) + ": dependencies");
    }
  }
  return true;
}

} // namespace twinscale::schedules
