// Binary encoding of a SimReport, to bring a flow-mode run back from its forked child.
#pragma once

#include <string>

#include "sim/simulate.hpp"

namespace twinscale::sim::detail {

std::string encode_report(const SimReport& report);
/// Throws SimError on a truncated or malformed buffer.
SimReport decode_report(const std::string& bytes);

} // namespace twinscale::sim::detail
