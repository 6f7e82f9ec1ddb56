#include "schedules/json_document.hpp"

#include <set>
#include <vector>

#include "common/did_you_mean.hpp"

namespace twinscale::schedules {

namespace {

using nlohmann::json;

/// One open object or array while parsing: the keys seen so far (objects) and where its
/// current member is (the last key, or the array index), for the JSON path in messages.
struct Frame {
  bool object = false;
  std::vector<std::string> keys;           // the object's keys, while it has few (searched in order)
  std::set<std::string, std::less<>> many; // all of them, once it has many
  std::string key;
  size_t index = 0;

  /// Records `key`; false if the object already has it.
  bool add(const std::string& k) {
    constexpr size_t kFew = 32; // the objects of twinscale's documents have < 20 keys
    if (many.empty()) {
      for (const std::string& seen : keys)
        if (seen == k) return false;
      keys.push_back(k);
      if (keys.size() > kFew) many.insert(keys.begin(), keys.end());
      return true;
    }
    return many.insert(k).second;
  }
};

std::string json_path(const std::vector<Frame>& stack, size_t levels) {
  std::string path = "$";
  for (size_t i = 0; i < levels; ++i)
    path += stack[i].object ? "." + stack[i].key : "[" + std::to_string(stack[i].index) + "]";
  return path;
}

/// A value of an array is complete: the next one gets the next index.
void member_done(std::vector<Frame>& stack) {
  if (!stack.empty() && !stack.back().object) ++stack.back().index;
}

} // namespace

json parse_json_document(std::string_view text, const std::string& label) {
  std::vector<Frame> stack;
  const json::parser_callback_t track = [&](int, json::parse_event_t event, json& value) -> bool {
    switch (event) {
    case json::parse_event_t::object_start:
    case json::parse_event_t::array_start:
      if (stack.size() >= kMaxJsonNesting)
        throw JsonDocumentError(label + ": " + json_path(stack, stack.size()) + ": nested deeper than " +
                                std::to_string(kMaxJsonNesting) + " levels (the limit for JSON inputs)");
      stack.emplace_back().object = event == json::parse_event_t::object_start;
      break;
    case json::parse_event_t::key: {
      Frame& f = stack.back();
      f.key = value.get<std::string>();
      if (!f.add(f.key))
        throw JsonDocumentError(label + ": " + json_path(stack, stack.size() - 1) + ": key \"" + f.key +
                                "\" is given twice; an object takes each key once (keep one)");
      break;
    }
    case json::parse_event_t::object_end:
    case json::parse_event_t::array_end:
      stack.pop_back();
      member_done(stack);
      break;
    case json::parse_event_t::value: member_done(stack); break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), track);
  } catch (const json::exception& e) { // parse_error, and out_of_range for 1e400
    throw JsonDocumentError(label + ": not valid JSON (" + e.what() + ")");
  }
}

void check_json_keys(const json& obj, std::initializer_list<std::string_view> known, const std::string& label,
                     const std::string& where) {
  if (!obj.is_object()) return;
  for (const auto& [key, value] : obj.items()) {
    bool found = false;
    for (std::string_view k : known) found = found || k == key;
    if (found) continue;
    std::string valid;
    for (std::string_view k : known) valid += (valid.empty() ? "" : ", ") + std::string(k);
    std::string hint;
    if (const auto near = nearest_name(known, key)) hint = "; did you mean \"" + *near + "\"?";
    throw JsonDocumentError(
        label + ": " + where + ": unknown key \"" + key + "\"" + hint +
        (valid.empty() ? std::string(" (this object takes no keys)") : "; valid keys here: " + valid));
  }
}

} // namespace twinscale::schedules
