// Atomic file writes under the one output policy (schedules/output_file.hpp): a temp
// file next to the target, fsync, rename, fsync of the directory. Readers see the old
// file or the complete new one, never a prefix.
#pragma once

#include <string>
#include <string_view>

namespace twinscale::backend::detail {

/// Throws BackendError naming `path` when any step fails.
void write_file_atomically(const std::string& path, std::string_view content);

} // namespace twinscale::backend::detail
