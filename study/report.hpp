// What `twinscale sweep show` prints from a results store: counts, the best points, the
// Pareto front of MFU (higher is better) against memory per GPU (lower is better), and
// the whole store as CSV (one column per axis, then the outputs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "study/store.hpp"

namespace twinscale::study {

/// Feasible points ordered best first: MFU (× ETTR in a campaign study) descending, then id.
std::vector<const StoredPoint*> ranked(const std::vector<StoredPoint>& rows);
/// The `k` best feasible points' ids (the flow_best re-simulation set).
std::vector<int64_t> best_ids(const std::vector<StoredPoint>& rows, int64_t k);
/// Points no other feasible point beats on both MFU (≥) and memory (≤), one strictly;
/// ordered by memory ascending.
std::vector<const StoredPoint*> pareto_front(const std::vector<StoredPoint>& rows);

/// The human summary: study, counts by status, the `top` best points, the Pareto front.
std::string summary_table(const StoreInfo& info, const std::vector<StoredPoint>& rows, int64_t top);
/// Every row: id, the axes, status, reason, the effective layout and every output.
std::string rows_csv(const StoreInfo& info, const std::vector<StoredPoint>& rows);

} // namespace twinscale::study
