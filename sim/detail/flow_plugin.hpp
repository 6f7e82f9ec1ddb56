// The flow engine as a plugin: SimGrid (and the ns-3 libraries it links) is the one heavy
// dependency of sim/, and only the flow mode needs it. sim/detail/flow_engine*.cpp and
// sim/congestion/link_capacity.cpp are built into their own shared library
// (libtwinscale_flow.so, next to the `twinscale` binary), the only part of the build that
// links SimGrid; the analytic mode, --help and every other command never map it.
// make_flow_engine opens the plugin on first use ($TWINSCALE_FLOW_PLUGIN when set, else
// next to the executable, else where the build wrote it; common/plugin.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sim/detail/network_paths.hpp"
#include "sim/detail/time_engine.hpp"
#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

/// Bumped whenever FlowPluginApi or a type it passes changes.
inline constexpr int kFlowPluginAbi = 1;
/// The plugin's one exported symbol: `extern "C" const void* twinscale_flow_plugin()`, the
/// address of its FlowPluginApi.
inline constexpr const char* kFlowPluginEntry = "twinscale_flow_plugin";

struct FlowPluginApi {
  int abi = kFlowPluginAbi; // first: common/plugin.hpp reads it
  std::unique_ptr<TimeEngine> (*make_flow_engine)(CompletionListener& listener, const NetworkPaths& paths,
                                                  std::vector<int64_t> slot_gpu, const SimOptions& options) = nullptr;
};

/// The flow engine (flow_engine.hpp) of `listener`'s slots on `paths`, from the plugin.
/// Throws SimError naming the places tried when the plugin cannot be loaded.
std::unique_ptr<TimeEngine> make_flow_engine(CompletionListener& listener, const NetworkPaths& paths,
                                             std::vector<int64_t> slot_gpu, const SimOptions& options);

} // namespace twinscale::sim::detail
