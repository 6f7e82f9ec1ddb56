// Strict JSON documents: the one parse every JSON input of twinscale goes through (its
// calibration tables, traces, checkpoint manifests, run-directory rank states, campaign
// results, study stores' cells). A key given twice in one object is refused naming it
// (nlohmann-json would keep the last silently), nesting is bounded (no recursion on a
// 100,000-deep array anywhere after the parse), and check_json_keys() refuses keys a
// reader does not know, with the same "did you mean" hint the TOML readers give.
// Callers include nlohmann-json themselves (schedules/ links it privately).
#pragma once

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.hpp"

namespace twinscale::schedules {

/// Deepest object/array nesting a JSON input may have; twinscale's own documents use < 10.
inline constexpr size_t kMaxJsonNesting = 256;

/// A JSON document that breaks a rule of parse_json_document or check_json_keys; the
/// message starts with the caller's label (the file, and what it is).
class JsonDocumentError : public Error {
public:
  explicit JsonDocumentError(const std::string& what) : Error(what) {}
};

/// Parses `text`. `label` starts every message ("calibration table cal.json"). Throws
/// JsonDocumentError for a syntax error ("LABEL: not valid JSON (…)"), a number out of
/// range, nesting deeper than kMaxJsonNesting, or a key repeated in one object
/// ("LABEL: $.kernels[2]: key \"seconds\" is given twice; …").
nlohmann::json parse_json_document(std::string_view text, const std::string& label);

/// Every key of the object `obj` (at JSON path `where`, "$" for the document) must be in
/// `known`; else JsonDocumentError naming the key, the nearest known key within two edits
/// ("did you mean") and the valid keys. `obj` that is not an object is left alone.
void check_json_keys(const nlohmann::json& obj, std::initializer_list<std::string_view> known, const std::string& label,
                     const std::string& where);

} // namespace twinscale::schedules
