// The names a fault plan may refer to (links, GPUs, servers) and how they resolve to
// indices. validate_plan() sees the cluster only through this interface, so a plan can be
// checked against a topology::Fabric (fabric_targets(), once the fabric names its parts)
// or against an explicit list of names (NamedTargets, used by tests and tools).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinscale::faults {

class PlanTargets {
public:
  virtual ~PlanTargets() = default;
  virtual std::optional<int64_t> find_link(std::string_view name) const = 0;
  virtual std::optional<int64_t> find_gpu(std::string_view name) const = 0;
  virtual std::optional<int64_t> find_server(std::string_view name) const = 0;
  /// A few valid names of each kind, for error messages ("gpu0, gpu1, …, gpu12287").
  virtual std::string link_name_examples() const = 0;
  virtual std::string gpu_name_examples() const = 0;
  virtual std::string server_name_examples() const = 0;
};

/// Targets given as explicit name lists; index = position in the list.
class NamedTargets final : public PlanTargets {
public:
  NamedTargets(std::vector<std::string> links, std::vector<std::string> gpus, std::vector<std::string> servers);

  std::optional<int64_t> find_link(std::string_view name) const override;
  std::optional<int64_t> find_gpu(std::string_view name) const override;
  std::optional<int64_t> find_server(std::string_view name) const override;
  std::string link_name_examples() const override;
  std::string gpu_name_examples() const override;
  std::string server_name_examples() const override;

private:
  std::vector<std::string> links_, gpus_, servers_;
};

/// "a, b, c, …, z (N names)": the first few and the last of a list of names.
std::string name_examples(const std::vector<std::string>& names);

} // namespace twinscale::faults
