// Pipeline orders against hand-worked sequences (Megatron-LM's schedules.py rules).
#include <catch2/catch.hpp>

#include <sstream>
#include <string>

#include "schedules/pipeline.hpp"

using namespace twinscale::schedules;

namespace {
// "F0c1" = forward of micro-batch 0 on model chunk 1
std::string render(const std::vector<PipelineStep>& steps) {
  std::ostringstream os;
  for (size_t i = 0; i < steps.size(); ++i)
    os << (i ? " " : "") << (steps[i].forward ? 'F' : 'B') << steps[i].micro_batch << 'c' << steps[i].chunk;
  return os.str();
}
} // namespace

TEST_CASE("1F1B: P=4, M=6 by hand", "[schedules][pipeline]") {
  const auto k = PipelineKind::OneFOneB;
  CHECK(render(pipeline_order(k, 4, 1, 6, 0)) == "F0c0 F1c0 F2c0 F3c0 B0c0 F4c0 B1c0 F5c0 B2c0 B3c0 B4c0 B5c0");
  CHECK(render(pipeline_order(k, 4, 1, 6, 3)) == "F0c0 B0c0 F1c0 B1c0 F2c0 B2c0 F3c0 B3c0 F4c0 B4c0 F5c0 B5c0");
  CHECK(render(pipeline_order(k, 4, 1, 2, 0)) == "F0c0 F1c0 B0c0 B1c0");
}

TEST_CASE("interleaved: P=2, V=2, M=4 by hand", "[schedules][pipeline]") {
  const auto k = PipelineKind::Interleaved;
  // rank 0: warm-up (2−0−1)·2 + (2−1)·2 = 4
  CHECK(pipeline_warmup(k, 2, 2, 4, 0) == 4);
  CHECK(render(pipeline_order(k, 2, 2, 4, 0)) == "F0c0 F1c0 F0c1 F1c1 "
                                                 "F2c0 B0c1 F3c0 B1c1 F2c1 B0c0 F3c1 B1c0 "
                                                 "B2c1 B3c1 B2c0 B3c0");
  // rank 1: warm-up 0 + 2 = 2
  CHECK(pipeline_warmup(k, 2, 2, 4, 1) == 2);
  CHECK(render(pipeline_order(k, 2, 2, 4, 1)) == "F0c0 F1c0 "
                                                 "F0c1 B0c1 F1c1 B1c1 F2c0 B0c0 F3c0 B1c0 F2c1 B2c1 F3c1 B3c1 "
                                                 "B2c0 B3c0");
}

TEST_CASE("interleaved: P=4, V=2, M=8 by hand", "[schedules][pipeline]") {
  const auto k = PipelineKind::Interleaved;
  // rank 0: warm-up (4−1)·2 + 4 = 10
  CHECK(render(pipeline_order(k, 4, 2, 8, 0)) == "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 F4c0 F5c0 "
                                                 "F6c0 B0c1 F7c0 B1c1 F4c1 B2c1 F5c1 B3c1 F6c1 B0c0 F7c1 B1c0 "
                                                 "B2c0 B3c0 B4c1 B5c1 B6c1 B7c1 B4c0 B5c0 B6c0 B7c0");
  // rank 1: warm-up (4−2)·2 + 4 = 8
  CHECK(render(pipeline_order(k, 4, 2, 8, 1)) ==
        "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 F2c1 F3c1 "
        "F4c0 B0c1 F5c0 B1c1 F6c0 B2c1 F7c0 B3c1 F4c1 B0c0 F5c1 B1c0 F6c1 B2c0 F7c1 B3c0 "
        "B4c1 B5c1 B6c1 B7c1 B4c0 B5c0 B6c0 B7c0");
  // rank 2: warm-up (4−3)·2 + 4 = 6
  CHECK(render(pipeline_order(k, 4, 2, 8, 2)) ==
        "F0c0 F1c0 F2c0 F3c0 F0c1 F1c1 "
        "F2c1 B0c1 F3c1 B1c1 F4c0 B2c1 F5c0 B3c1 F6c0 B0c0 F7c0 B1c0 F4c1 B2c0 F5c1 B3c0 "
        "F6c1 B4c1 F7c1 B5c1 "
        "B6c1 B7c1 B4c0 B5c0 B6c0 B7c0");
  // rank 3: warm-up 0 + 4 = 4
  CHECK(render(pipeline_order(k, 4, 2, 8, 3)) == "F0c0 F1c0 F2c0 F3c0 "
                                                 "F0c1 B0c1 F1c1 B1c1 F2c1 B2c1 F3c1 B3c1 F4c0 B0c0 F5c0 B1c0 "
                                                 "F6c0 B2c0 F7c0 B3c0 F4c1 B4c1 F5c1 B5c1 F6c1 B6c1 F7c1 B7c1 "
                                                 "B4c0 B5c0 B6c0 B7c0");
}

TEST_CASE("every pass appears exactly once, backward after forward", "[schedules][pipeline]") {
  for (auto [P, V, M] : {std::tuple{2, 2, 4}, {4, 2, 8}, {8, 6, 32}, {4, 3, 12}, {3, 2, 3}}) {
    for (int64_t r = 0; r < P; ++r) {
      const auto order = pipeline_order(PipelineKind::Interleaved, P, V, M, r);
      REQUIRE(order.size() == static_cast<size_t>(2 * M * V));
      std::vector<int> fwd(M * V, 0), bwd(M * V, 0);
      for (const auto& s : order) {
        const auto id = s.micro_batch * V + s.chunk;
        if (s.forward) {
          ++fwd[id];
        } else {
          CHECK(fwd[id] == 1);
          ++bwd[id];
        }
      }
      for (int64_t i = 0; i < M * V; ++i) CHECK((fwd[i] == 1 && bwd[i] == 1));
    }
  }
}
