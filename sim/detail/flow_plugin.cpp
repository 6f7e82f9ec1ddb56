// Opens the flow plugin (flow_plugin.hpp) on first use.
#include "sim/detail/flow_plugin.hpp"

#include <string>

#include "common/plugin.hpp"
#include "sim/error.hpp"

namespace twinscale::sim::detail {

std::unique_ptr<TimeEngine> make_flow_engine(CompletionListener& listener, const NetworkPaths& paths,
                                             std::vector<int64_t> slot_gpu, const SimOptions& options) {
  static const plugin::Opened loaded = plugin::open_plugin(
      "libtwinscale_flow.so", "TWINSCALE_FLOW_PLUGIN", TWINSCALE_FLOW_PLUGIN_PATH, kFlowPluginEntry, kFlowPluginAbi);
  if (loaded.table == nullptr)
    throw SimError("flow mode: cannot load the SimGrid plugin libtwinscale_flow.so (set TWINSCALE_FLOW_PLUGIN to its "
                   "path, or use --mode analytic); tried:" +
                   loaded.error);
  const auto& api = *static_cast<const FlowPluginApi*>(loaded.table);
  return api.make_flow_engine(listener, paths, std::move(slot_gpu), options);
}

} // namespace twinscale::sim::detail
