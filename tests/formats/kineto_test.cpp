// The PyTorch profiler (Kineto) reader (formats/kineto.hpp) on a real trace written by
// PyTorch 2.11 on an H100 (tests/data/kineto-h100) and on the hand-made two-rank set of
// tests/data/kineto: kernel kinds, steps, bytes and instances of collectives, notes; and
// the mapping onto a twinscale trace refusing what does not map.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "formats/kineto.hpp"
#include "schedules/error.hpp"

using namespace twinscale;
namespace s = twinscale::schedules;

namespace {
const std::string kData = std::string(TWINSCALE_SOURCE_DIR) + "/tests/data/";
} // namespace

TEST_CASE("kineto: a real PyTorch 2.11 trace of an H100 reads as GEMM, attention and elementwise kernels per step",
          "[formats][kineto]") {
  const std::string path = kData + "kineto-h100/rank0.json";
  REQUIRE(formats::is_kineto_trace(path));
  const formats::KinetoTrace t = formats::read_kineto_traces({path});
  CHECK(t.world == 1);
  CHECK(t.device == "NVIDIA H100 80GB HBM3");
  REQUIRE(t.records.size() == 9);
  const std::vector<s::OpKind> step{s::OpKind::Gemm, s::OpKind::Attention, s::OpKind::Elementwise};
  for (size_t i = 0; i < t.records.size(); ++i) {
    const s::TraceRecord& r = t.records[i];
    INFO(i << " " << r.name);
    CHECK(r.rank == 0);
    CHECK(r.op_index == i);
    CHECK(r.kind == step[i % 3]);
    CHECK(r.stream == s::Stream::Compute);
    CHECK(r.labels.iteration == static_cast<int32_t>(i / 3)); // ProfilerStep#2, #3, #4
    CHECK(r.duration_s > 0);
    if (i > 0) CHECK(r.start_s >= t.records[i - 1].start_s);
  }
  REQUIRE(t.notes.size() == 1);
  CHECK(t.notes[0] == "12 GPU memory copies and sets skipped (twinscale times copies only as data-loading ops)");
}

TEST_CASE("kineto: the hand-made set gives each rank its collectives with bytes and a shared instance",
          "[formats][kineto]") {
  const formats::AnyTrace t = formats::read_any_trace({kData + "kineto"});
  REQUIRE(t.kineto);
  CHECK(t.source == "kineto");
  CHECK(t.device == "NVIDIA A100-SXM4-80GB");
  REQUIRE(t.records.size() == 12); // 6 kernels a rank; rank 1 has no distributedInfo: its place in the folder
  std::vector<const s::TraceRecord*> allreduce;
  for (const auto& r : t.records)
    if (r.kind == s::OpKind::AllReduce) allreduce.push_back(&r);
  REQUIRE(allreduce.size() == 4);
  CHECK(allreduce[0]->rank == 0);
  CHECK(allreduce[2]->rank == 1);
  CHECK(allreduce[0]->bytes == 2.0 * 1048576); // In msg nelems × BFloat16
  CHECK(allreduce[0]->instance == "[0, 1]#0");
  CHECK(allreduce[1]->instance == "[0, 1]#1");
  CHECK(allreduce[2]->instance == allreduce[0]->instance);
  CHECK(allreduce[1]->labels.iteration == 1);
}

TEST_CASE("kineto: mapping onto a twinscale trace pairs kernels with ops and refuses what does not map",
          "[formats][kineto]") {
  const formats::AnyTrace k = formats::read_any_trace({kData + "kineto"});
  // a twinscale trace of the same two ranks: GEMM, attention, all-reduce per step
  std::vector<s::TraceRecord> ref;
  for (int64_t rank = 0; rank < 2; ++rank)
    for (uint32_t i = 0; i < 6; ++i) {
      s::TraceRecord r;
      r.rank = rank;
      r.op_index = i;
      r.kind = i % 3 == 0 ? s::OpKind::Gemm : i % 3 == 1 ? s::OpKind::Attention : s::OpKind::AllReduce;
      r.stream = i % 3 == 2 ? s::Stream::DpComm : s::Stream::Compute;
      r.name = "op" + std::to_string(i);
      r.bytes = i % 3 == 2 ? 2.0 * 1048576 : 0;
      r.instance = i % 3 == 2 ? "dp@0#" + std::to_string(i / 3) : "";
      ref.push_back(r);
    }
  const auto aligned = formats::align_kineto(k.records, "k", ref, "ref");
  REQUIRE(aligned.size() == 12);
  CHECK(aligned[2].name == "op2");
  CHECK(aligned[2].instance == "dp@0#0");
  CHECK(aligned[2].start_s == Approx(800e-6));
  CHECK(aligned[0].duration_s == Approx(402.5e-6));

  auto fewer = ref;
  fewer.erase(fewer.begin() + 4); // rank 0 loses its second attention
  CHECK_THROWS_WITH(formats::align_kineto(k.records, "k", fewer, "ref"),
                    Catch::Contains("k: rank 0 has 4 compute kernels but ref has 3 compute ops") &&
                        Catch::Contains("one kernel per op"));
  auto bigger = ref;
  bigger[5].bytes = 8.0 * 1048576;
  CHECK_THROWS_WITH(formats::align_kineto(k.records, "k", bigger, "ref"),
                    Catch::Contains("k: rank 0: all_reduce kernels #1") &&
                        Catch::Contains("not in the schedule's order"));
  ref.resize(6); // rank 1 absent from the reference
  CHECK_THROWS_WITH(formats::align_kineto(k.records, "k", ref, "ref"),
                    Catch::Contains("k: rank 1 has kernels but ref has no op of that rank"));
}
