// Errors of study/: a results store that cannot be opened, read or written, or that holds
// what no twinscale wrote (the path or value, and what would be valid).
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::study {

/// A store that cannot be opened, read or written (path, SQLite's message), or a stored
/// value that is not valid.
class StoreError : public Error {
public:
  explicit StoreError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::study
