// Errors of diagnose/: an input (trace, per-rank CSV, run directory) that cannot be read
// or analysed. Messages name the file, line or rank and say what would be valid.
#pragma once

#include <string>

#include "common/error.hpp"

namespace twinscale::diagnose {

class DiagnoseError : public Error {
public:
  explicit DiagnoseError(const std::string& what) : Error(what) {}
};

} // namespace twinscale::diagnose
