#include "faults/plan_targets.hpp"

#include <algorithm>

namespace twinscale::faults {

namespace {
std::optional<int64_t> find_in(const std::vector<std::string>& names, std::string_view name) {
  auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) return std::nullopt;
  return static_cast<int64_t>(it - names.begin());
}
} // namespace

std::string name_examples(const std::vector<std::string>& names) {
  if (names.empty()) return "(none)";
  std::string out;
  const size_t shown = std::min<size_t>(names.size(), 3);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > shown + 1) out += ", …";
  if (names.size() > shown) out += ", " + names.back();
  out += " (" + std::to_string(names.size()) + " names)";
  return out;
}

NamedTargets::NamedTargets(std::vector<std::string> links, std::vector<std::string> gpus,
                           std::vector<std::string> servers)
    : links_(std::move(links)), gpus_(std::move(gpus)), servers_(std::move(servers)) {}

std::optional<int64_t> NamedTargets::find_link(std::string_view n) const { return find_in(links_, n); }
std::optional<int64_t> NamedTargets::find_gpu(std::string_view n) const { return find_in(gpus_, n); }
std::optional<int64_t> NamedTargets::find_server(std::string_view n) const { return find_in(servers_, n); }
std::string NamedTargets::link_name_examples() const { return name_examples(links_); }
std::string NamedTargets::gpu_name_examples() const { return name_examples(gpus_); }
std::string NamedTargets::server_name_examples() const { return name_examples(servers_); }

} // namespace twinscale::faults
