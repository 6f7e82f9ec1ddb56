// Test helper: how many ops of each name a program runs in one phase.
#pragma once

#include <map>
#include <string>

#include "schedules/schedule.hpp"

namespace twinscale::schedules::test {

inline std::map<std::string, int> count_names(const Schedule& s, const Program& p, Phase phase) {
  std::map<std::string, int> out;
  for (const Op& op : p.ops)
    if (op.labels.phase == phase) ++out[s.names[op.name]];
  return out;
}

} // namespace twinscale::schedules::test
