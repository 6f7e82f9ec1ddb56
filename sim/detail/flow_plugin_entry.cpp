// The flow plugin's one exported symbol (flow_plugin.hpp): the table of its entry points.
#include "sim/detail/flow_engine.hpp"
#include "sim/detail/flow_plugin.hpp"

namespace {

std::unique_ptr<twinscale::sim::detail::TimeEngine> make(twinscale::sim::detail::CompletionListener& listener,
                                                         const twinscale::sim::detail::NetworkPaths& paths,
                                                         std::vector<int64_t> slot_gpu,
                                                         const twinscale::sim::SimOptions& options) {
  return std::make_unique<twinscale::sim::detail::FlowEngine>(listener, paths, std::move(slot_gpu), options);
}

} // namespace

extern "C" __attribute__((visibility("default"))) const void* twinscale_flow_plugin() {
  static const twinscale::sim::detail::FlowPluginApi api{twinscale::sim::detail::kFlowPluginAbi, &make};
  return &api;
}
