#include "faults/fabric_targets.hpp"

namespace twinscale::faults {

namespace {
/// The first three and the last name of `n` names produced by `name_of`.
template <class F>
std::string examples(int64_t n, F&& name_of) {
  std::vector<std::string> some;
  for (int64_t i = 0; i < std::min<int64_t>(n, 3); ++i) some.push_back(name_of(i));
  std::string out = name_examples(some);
  if (n > 3) {
    out = out.substr(0, out.rfind(" (")); // drop the count of the sample
    if (n > 4) out += ", …";
    out += ", " + name_of(n - 1) + " (" + std::to_string(n) + " names)";
  }
  return out;
}
} // namespace

std::optional<int64_t> FabricTargets::find_link(std::string_view name) const {
  if (auto l = fabric_.find_link(name)) return static_cast<int64_t>(*l);
  return std::nullopt;
}
std::optional<int64_t> FabricTargets::find_gpu(std::string_view name) const { return fabric_.find_gpu(name); }
std::optional<int64_t> FabricTargets::find_server(std::string_view name) const { return fabric_.find_server(name); }

std::string FabricTargets::link_name_examples() const {
  return examples(static_cast<int64_t>(fabric_.links().size()),
                  [&](int64_t i) { return fabric_.link_name(static_cast<uint32_t>(i)); });
}
std::string FabricTargets::gpu_name_examples() const {
  return examples(fabric_.gpus(), [&](int64_t i) { return fabric_.gpu_name(i); });
}
std::string FabricTargets::server_name_examples() const {
  return examples(fabric_.servers(), [&](int64_t i) { return fabric_.server_name(i); });
}

} // namespace twinscale::faults
