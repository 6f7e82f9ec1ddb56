// The schedule tests' validity check: a schedule passes the validator both ways it reads
// one — with its symmetry shortcut and rank by rank — and any violation is reported.
#pragma once

#include <catch2/catch.hpp>

#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

namespace twinscale::schedules::test {

inline void check_valid(const Schedule& s) {
  ValidateOptions per_rank;
  per_rank.use_symmetry = false;
  for (const ValidateOptions& o : {ValidateOptions{}, per_rank}) {
    const auto v = validate(s, o);
    for (const auto& x : v) UNSCOPED_INFO((o.use_symmetry ? "" : "rank by rank: ") << describe(x));
    CHECK(v.empty());
  }
}

} // namespace twinscale::schedules::test
