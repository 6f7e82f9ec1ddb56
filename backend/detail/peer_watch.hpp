// What a rank waiting for its peers outside the executor (the CPU device's start barrier)
// reads of the run directory: the abort flag any rank may raise, and whether a rank of
// this host has died (docs/backend.md, "A rank that dies before the run starts").
#pragma once

#include <functional>
#include <string>

namespace twinscale::backend::detail {

/// The run directory's abort flag (`abort`), which any rank that gives up raises.
std::string abort_flag_path(const std::string& run_dir);
/// True once that flag is up.
std::function<bool()> abort_flag_up(const std::string& run_dir);

/// True once the run directory's abort flag is up, or once a rank of `host` other than
/// `rank` is gone (the pid of its rank-<r>.started file no longer exists): then it raises
/// the flag for the others. Ranks of other hosts are not checked. The pids are read at
/// most every `min_interval_s` (the flag at every call).
std::function<bool()> start_barrier_abort(const std::string& run_dir, int rank, const std::string& host,
                                          double min_interval_s = 0.5);

} // namespace twinscale::backend::detail
