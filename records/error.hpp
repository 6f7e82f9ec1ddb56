// Errors of records/: a run-directory file that cannot be read or written. Messages
// name the file and say what is wrong in it.
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::records {

class RecordError : public Error {
public:
  explicit RecordError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::records
