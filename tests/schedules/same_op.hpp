// Test helper: two ops are the same op, field by field (Op has no operator==: its padding
// makes a byte comparison meaningless).
#pragma once

#include "schedules/op.hpp"

namespace twinscale::schedules::test {

inline bool same_op(const Op& x, const Op& y) {
  return x.kind == y.kind && x.kernel == y.kernel && x.stream == y.stream && x.dtype == y.dtype &&
         x.group == y.group && x.priority == y.priority && x.peer == y.peer && x.flops == y.flops &&
         x.bytes == y.bytes && x.shape == y.shape && x.name == y.name && x.dep_begin == y.dep_begin &&
         x.dep_count == y.dep_count && x.labels.iteration == y.labels.iteration &&
         x.labels.micro_batch == y.labels.micro_batch && x.labels.chunk == y.labels.chunk &&
         x.labels.layer == y.labels.layer && x.labels.phase == y.labels.phase;
}

} // namespace twinscale::schedules::test
