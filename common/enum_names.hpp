// The names users type for an enum's values (files, the command line, study axes, JSON),
// kept in one table beside the enum, e.g. schedules::kPipelineKindNames next to
// PipelineKind. Readers, writers and option checks look names up here, so a new value
// is named once and every reader accepts it. Header-only, below every layer.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace twinscale {

template <class E>
struct EnumName {
  std::string_view name;
  E value;
};

template <class E, std::size_t N>
using EnumNames = std::array<EnumName<E>, N>;

/// The value named `text`, or nullopt.
template <class E, std::size_t N>
std::optional<E> enum_from_name(const EnumNames<E, N>& names, std::string_view text) {
  for (const auto& n : names)
    if (n.name == text) return n.value;
  return std::nullopt;
}

/// The name of `value` ("?" for a value missing from the table: an internal error).
template <class E, std::size_t N>
std::string_view enum_name(const EnumNames<E, N>& names, E value) {
  for (const auto& n : names)
    if (n.value == value) return n.name;
  return "?";
}

/// "a, b, c": the valid names, in table order, for messages.
template <class E, std::size_t N>
std::string enum_names_list(const EnumNames<E, N>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "" : ", ") + std::string(n.name);
  return out;
}

/// The names in table order (command-line checks, study axes).
template <class E, std::size_t N>
std::vector<std::string> enum_names_vector(const EnumNames<E, N>& names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.emplace_back(n.name);
  return out;
}

} // namespace twinscale
