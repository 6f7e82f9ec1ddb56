// The names of a topology::Fabric as fault-plan targets: links "<a>-<b>#k"
// ("server12.nic3-tor5.r3", "tor5.r3-agg2.pod1.r3#1"), GPUs "server12.gpu3", servers
// "server12" (names defined by topology/fabric.hpp).
#pragma once

#include "faults/plan_targets.hpp"
#include "topology/fabric.hpp"

namespace twinscale::faults {

class FabricTargets final : public PlanTargets {
public:
  explicit FabricTargets(const topology::Fabric& fabric) : fabric_(fabric) {}

  std::optional<int64_t> find_link(std::string_view name) const override;
  std::optional<int64_t> find_gpu(std::string_view name) const override;
  std::optional<int64_t> find_server(std::string_view name) const override;
  std::string link_name_examples() const override;
  std::string gpu_name_examples() const override;
  std::string server_name_examples() const override;

private:
  const topology::Fabric& fabric_;
};

} // namespace twinscale::faults
