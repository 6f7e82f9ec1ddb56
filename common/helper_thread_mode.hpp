// When work may be shared with a helper thread (common/helper_thread.hpp), in a header of
// its own so that option structs can name it without pulling in the threads.
#pragma once

#include <cstdint>

namespace twinscale {

enum class HelperThread : uint8_t {
  Off,          ///< all on the caller's thread
  WhenCoreIdle, ///< with a helper where another core has nothing to run (other_core_idle)
  Always,       ///< with a helper wherever the process may use two CPUs (tests)
};

} // namespace twinscale
