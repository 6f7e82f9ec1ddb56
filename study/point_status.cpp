// A point's status and its stored name, apart from the evaluation (which needs the
// simulator): the results store reads and writes it, and the store's fuzzing harness
// builds without sim/.
#include "study/error.hpp"
#include "study/evaluate.hpp"

namespace twinscale::study {

std::string_view to_string(PointStatus s) {
  switch (s) {
  case PointStatus::Ok: return "ok";
  case PointStatus::Infeasible: return "infeasible";
  case PointStatus::Failed: return "failed";
  }
  return "?";
}

PointStatus point_status_from(std::string_view s) {
  if (s == "ok") return PointStatus::Ok;
  if (s == "infeasible") return PointStatus::Infeasible;
  if (s == "failed") return PointStatus::Failed;
  throw StoreError("a stored point status is '" + std::string(s) + "'; valid: ok, infeasible, failed");
}

} // namespace twinscale::study
