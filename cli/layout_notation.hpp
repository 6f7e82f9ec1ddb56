// One notation for a job's layout in every header, flag and file: Megatron-Core's names
// in its order, tp, cp, ep, dp, pp (tp varies fastest across ranks, then cp, dp, pp).
// Printed as "tp 8 × cp 16 × dp 8 × pp 16" (the product is the world; cp shown when > 1)
// with ", ep 8" after it when the experts are spread over ep of the dp ranks. Read from a
// flag as three numbers in that order, TPxDPxPP ("8x16x8"), or as named parts in any
// order joined by 'x' ("tp8xcp2xdp4xpp8", "pp8xtp8xdp192").
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "schedules/job.hpp"
#include "schedules/layout.hpp"

namespace twinscale::cli {

/// A layout as a flag or file gives it: the job's own degrees (dp without cp).
struct LayoutShape {
  int64_t tp = 1, cp = 1, ep = 1, dp = 1, pp = 1;
  int64_t world() const { return tp * cp * dp * pp; }
  /// The schedule's Layout (whose dp counts dp·cp coordinates).
  schedules::Layout layout() const;
};

/// "tp 8 × cp 16 × dp 8 × pp 16", ", ep 8" appended when ep > 1.
std::string layout_text(const LayoutShape& shape);
std::string layout_text(const schedules::ParallelSpec& parallel);
std::string layout_text(const schedules::Layout& layout);

/// The flag's value as TPxDPxPP or named parts; ConfigError naming `option`, the text and
/// both forms otherwise, or naming cp/ep where `allow_cp_ep` is false.
LayoutShape parse_layout_option(const std::string& option, const std::string& text, bool allow_cp_ep = true);

/// A run directory's layout file (DIR/layout.json), written by `run --run-dir` and
/// `simulate --run-dir` so that `diagnose DIR` needs no --layout.
void write_run_layout(const std::string& dir, const schedules::Layout& layout);
/// The layout DIR/layout.json states; nullopt when the file is absent; ConfigError naming
/// the file when it is malformed.
std::optional<schedules::Layout> read_run_layout(const std::string& dir);

} // namespace twinscale::cli
