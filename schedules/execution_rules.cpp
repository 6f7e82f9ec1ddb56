#include "schedules/execution_rules.hpp"

namespace twinscale::schedules {

void order_ready(const Program& p, std::span<uint32_t> ready) {
  for (size_t i = 1; i < ready.size(); ++i) { // insertion sort: a few elements, no allocation
    const uint32_t x = ready[i];
    size_t j = i;
    for (; j > 0 && starts_before(p, x, ready[j - 1]); --j) ready[j] = ready[j - 1];
    ready[j] = x;
  }
}

} // namespace twinscale::schedules
