// The calibration table (schedules/calibration.hpp): medians, bus bandwidth,
// interpolation, a byte-identical round trip, and read errors that name file and entry.
#include <cmath>
#include <sstream>

#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/calibration.hpp"
#include "schedules/calibration_coverage.hpp"
#include "schedules/error.hpp"
#include "schedules/schedule.hpp"

using namespace twinscale::schedules;

namespace {
CalibrationTable sample_table() {
  CalibrationBuilder b;
  b.add_kernel_sample(Kernel::Gemm, DType::BF16, {128, 256, 64, 0}, 3e-6);
  b.add_kernel_sample(Kernel::Gemm, DType::BF16, {128, 256, 64, 0}, 1e-6);
  b.add_kernel_sample(Kernel::Gemm, DType::BF16, {128, 256, 64, 0}, 2e-6);
  b.add_kernel_sample(Kernel::FusedLayerNorm, DType::BF16, {4096, 0, 0, 0}, 5e-6);
  b.add_comm_sample(OpKind::AllReduce, 8, 1 << 20, 1e-4);
  b.add_comm_sample(OpKind::AllReduce, 8, 1 << 20, 3e-4);
  b.add_comm_sample(OpKind::AllReduce, 8, 1 << 24, 1e-3);
  return b.build("cpu", "test");
}
} // namespace

TEST_CASE("calibration: medians and nccl-tests bus bandwidth") {
  const CalibrationTable t = sample_table();
  const KernelTiming* g = t.find_kernel(Kernel::Gemm, DType::BF16, {128, 256, 64, 0});
  REQUIRE(g != nullptr);
  CHECK(g->seconds == Approx(2e-6));
  CHECK(g->samples == 3);
  CHECK(t.find_kernel(Kernel::Gemm, DType::FP32, {128, 256, 64, 0}) == nullptr);
  const CommBandwidth* c = t.find_comm(OpKind::AllReduce, 8, 1 << 20);
  REQUIRE(c != nullptr);
  CHECK(c->seconds == Approx(2e-4)); // median of two = mean
  CHECK(c->algbw_bytes_per_s == Approx((1 << 20) / 2e-4));
  CHECK(c->busbw_bytes_per_s == Approx(c->algbw_bytes_per_s * 2.0 * 7.0 / 8.0));
  CHECK(bus_factor(OpKind::AllGather, 4) == Approx(0.75));
  CHECK(bus_factor(OpKind::Send, 2) == Approx(1.0));
}

TEST_CASE("calibration: bandwidth interpolates in log(bytes) and clamps") {
  const CalibrationTable t = sample_table();
  const double lo = t.find_comm(OpKind::AllReduce, 8, 1 << 20)->busbw_bytes_per_s;
  const double hi = t.find_comm(OpKind::AllReduce, 8, 1 << 24)->busbw_bytes_per_s;
  CHECK(*t.busbw_bytes_per_s(OpKind::AllReduce, 8, 1 << 10) == Approx(lo));
  CHECK(*t.busbw_bytes_per_s(OpKind::AllReduce, 8, 1 << 30) == Approx(hi));
  CHECK(*t.busbw_bytes_per_s(OpKind::AllReduce, 8, 1 << 22) == Approx(0.5 * (lo + hi)));
  CHECK_FALSE(t.busbw_bytes_per_s(OpKind::AllGather, 8, 1 << 20).has_value());
}

TEST_CASE("calibration: write/read round trip is byte-identical") {
  std::ostringstream a;
  write_calibration(sample_table(), a);
  std::istringstream in(a.str());
  const CalibrationTable back = read_calibration(in, "a.json");
  CHECK(back.kernels.size() == 2);
  CHECK(back.comms.size() == 2);
  std::ostringstream b;
  write_calibration(back, b);
  CHECK(a.str() == b.str());
}

TEST_CASE("calibration: read errors name the file and the entry") {
  auto read = [](const std::string& text) {
    std::istringstream in(text);
    return read_calibration(in, "cal.json");
  };
  CHECK_THROWS_WITH(read("{"), Catch::Contains("cal.json") && Catch::Contains("not valid JSON"));
  CHECK_THROWS_WITH(read(R"({"format":"twinscale-calibration","version":99})"),
                    Catch::Contains("cal.json") && Catch::Contains("version"));
  CHECK_THROWS_WITH(
      read(
          R"({"format":"twinscale-calibration","version":1,"kernels":[{"kernel":"gemm","dtype":"bf16","shape":[1,2,3,0],"seconds":1e-6,"samples":1},{"kernel":"gemmm","dtype":"bf16"}]})"),
      Catch::Contains("cal.json") && Catch::Contains("kernels[1]") && Catch::Contains("gemmm") &&
          Catch::Contains("flash_attention2"));
  CHECK_THROWS_WITH(
      read(
          R"({"format":"twinscale-calibration","version":1,"comms":[{"kind":"all_reduce","group_size":8,"bytes":-1}]})"),
      Catch::Contains("comms[0] (all_reduce)") && Catch::Contains("\"bytes\""));
  CHECK_THROWS_AS(read_calibration_file("/nonexistent/cal.json"), ScheduleError);
}

TEST_CASE("calibration keys distinguish ops of one kernel and shape", "[schedules][calibration]") {
  CalibrationBuilder b;
  b.add_kernel_sample(Kernel::FlashAttention2, DType::BF16, {16, 2048, 128, 0}, 1e-3, "attn.core");
  b.add_kernel_sample(Kernel::FlashAttention2, DType::BF16, {16, 2048, 128, 0}, 2.5e-3, "attn.core.bwd");
  b.add_kernel_sample(Kernel::LayerNorm, DType::BF16, {4096, 0, 0, 0}, 1e-6, "attn.ln.mean");
  b.add_kernel_sample(Kernel::LayerNorm, DType::BF16, {4096, 0, 0, 0}, 2e-6, "attn.ln.norm");
  const CalibrationTable t = b.build("cuda", "test");
  CHECK(t.kernels.size() == 4); // not averaged into two
  CHECK(t.find_kernel(Kernel::FlashAttention2, DType::BF16, {16, 2048, 128, 0}, "attn.core.bwd")->seconds == 2.5e-3);
  CHECK(t.find_kernel(Kernel::LayerNorm, DType::BF16, {4096, 0, 0, 0}, "attn.ln.norm")->seconds == 2e-6);
  CHECK(t.find_kernel(Kernel::LayerNorm, DType::BF16, {4096, 0, 0, 0}, "attn.ln.var") == nullptr);
  // Round trip keeps the op; a version-1 entry (no op) matches any op.
  std::ostringstream out;
  write_calibration(t, out);
  CHECK(out.str().find("attn.core.bwd") != std::string::npos);
  std::istringstream v1(
      R"({"format":"twinscale-calibration","version":1,"kernels":[{"kernel":"gemm","dtype":"bf16","shape":[1,2,3,0],"seconds":1e-6,"samples":1}],"comms":[]})");
  const CalibrationTable old = read_calibration(v1, "old.json");
  CHECK(old.find_kernel(Kernel::Gemm, DType::BF16, {1, 2, 3, 0}, "mlp.fc1") != nullptr);
}

TEST_CASE("calibration: communication time interpolates log-log in bytes and group size", "[schedules][calibration]") {
  CalibrationBuilder b;
  b.add_comm_sample(OpKind::AllReduce, 2, 1e3, 1e-5);
  b.add_comm_sample(OpKind::AllReduce, 2, 1e5, 1e-3);
  b.add_comm_sample(OpKind::AllReduce, 8, 1e3, 4e-5);
  b.add_comm_sample(OpKind::AllReduce, 8, 1e5, 4e-3);
  b.add_comm_sample(OpKind::Send, 2, 1e4, 2e-5);
  const CalibrationTable t = b.build("cuda", "test");
  CHECK(*t.comm_seconds(OpKind::AllReduce, 2, 1e4) == Approx(1e-4));   // geometric midpoint
  CHECK(*t.comm_seconds(OpKind::AllReduce, 2, 10) == Approx(1e-5));    // latency bound below
  CHECK(*t.comm_seconds(OpKind::AllReduce, 2, 1e6) == Approx(1e-2));   // bandwidth bound above
  CHECK(*t.comm_seconds(OpKind::AllReduce, 4, 1e3) == Approx(2e-5));   // log-log between groups 2 and 8
  CHECK_FALSE(t.comm_seconds(OpKind::AllReduce, 16, 1e3).has_value()); // no extrapolation in group size
  CHECK_FALSE(t.comm_seconds(OpKind::AllGather, 2, 1e3).has_value());
  CHECK(*t.comm_seconds(OpKind::Recv, 2, 1e4) == Approx(2e-5)); // a receive is its send's link
  CHECK(*t.comm_seconds(OpKind::AllReduce, 1, 1e4) == 0.0);     // nothing to move
}

TEST_CASE("calibration: a CPU table is looked up at fp32 and the executed shape", "[schedules][calibration]") {
  Op gemm;
  gemm.kind = OpKind::Gemm;
  gemm.kernel = Kernel::Gemm;
  gemm.dtype = DType::BF16;
  gemm.shape = {1024, 512, 256, 0};
  CHECK(executed_shape(gemm, 4) == std::array<int64_t, 4>{256, 128, 64, 0});
  CHECK(executed_shape(gemm, 3) == std::array<int64_t, 4>{342, 171, 86, 0}); // rounded up
  CHECK(executed_bytes(10, 4) == 4);                                         // at least one float
  CalibrationBuilder b;
  b.add_kernel_sample(Kernel::Gemm, DType::FP32, {256, 128, 64, 0}, 7e-4, "mlp.fc1");
  b.add_comm_sample(OpKind::Send, 2, 1000, 1e-5);
  CalibrationTable cpu = b.build("cpu", "cpu");
  cpu.shape_divisor = 4;
  CHECK(*cpu.kernel_seconds(gemm, "mlp.fc1") == 7e-4);
  CHECK_FALSE(cpu.kernel_seconds(gemm, "mlp.fc2").has_value());
  CHECK(*cpu.comm_seconds(OpKind::Send, 2, 4000) == Approx(1e-5)); // 4000 scheduled bytes = 1000 moved
  CalibrationTable cuda = cpu;
  cuda.source = "cuda"; // measured at the scheduled dtype and shape: the fp32 entry is not this op
  CHECK_FALSE(cuda.kernel_seconds(gemm, "mlp.fc1").has_value());
  // The divisor survives a round trip; a version-2 file has divisor 1.
  std::ostringstream out;
  write_calibration(cpu, out);
  std::istringstream in(out.str());
  CHECK(read_calibration(in, "cpu.json").shape_divisor == 4);
  std::istringstream v2(R"({"format":"twinscale-calibration","version":2,"source":"cpu","kernels":[],"comms":[]})");
  CHECK(read_calibration(v2, "v2.json").shape_divisor == 1);
  std::istringstream bad(R"({"format":"twinscale-calibration","version":3,"shape_divisor":0})");
  CHECK_THROWS_WITH(read_calibration(bad, "bad.json"), Catch::Contains("bad.json") && Catch::Contains("shape_divisor"));
}

TEST_CASE("calibration coverage counts ops and time from measured entries", "[schedules][calibration]") {
  const Schedule s = lower(twinscale::config::load_job_preset("tiny-1f1b"));
  Trace trace;
  CalibrationBuilder b;
  const Program& p = s.program(0);
  int64_t gemms = 0;
  for (uint32_t i = 0; i < p.ops.size(); ++i) {
    trace.events.push_back({0, i, static_cast<double>(i), static_cast<double>(i) + 1.0, false});
    const Op& op = p.ops[i];
    if (op.kind == OpKind::Gemm) {
      ++gemms;
      b.add_kernel_sample(op.kernel, op.dtype, op.shape, 1e-3, s.names[op.name]);
    }
  }
  const CalibrationTable t = b.build("cuda", "test");
  const CalibrationCoverage c = calibration_coverage(t, s, trace);
  CHECK(c.ops == static_cast<int64_t>(p.ops.size()));
  CHECK(c.measured_ops == gemms);
  CHECK(c.time_share() == Approx(static_cast<double>(gemms) / static_cast<double>(p.ops.size())));
  trace.events.push_back({0, static_cast<uint32_t>(p.ops.size()), 0, 1, false});
  CHECK_THROWS_WITH(calibration_coverage(t, s, trace), Catch::Contains("op " + std::to_string(p.ops.size())));
}

TEST_CASE("calibration: an op measured at other shapes is interpolated in work", "[schedules][calibration]") {
  CalibrationBuilder b;
  b.add_kernel_sample(Kernel::AdamStep, DType::FP32, {1000, 0, 0, 0}, 1e-3, "optimizer.adam");
  b.add_kernel_sample(Kernel::AdamStep, DType::FP32, {100000, 0, 0, 0}, 4e-2, "optimizer.adam");
  const CalibrationTable t = b.build("cpu", "cpu");
  Op op;
  op.kind = OpKind::OptimizerStep;
  op.kernel = Kernel::AdamStep;
  op.shape = {10000, 0, 0, 0};
  CHECK(*t.kernel_seconds(op, "optimizer.adam") == Approx(std::sqrt(1e-3 * 4e-2))); // log-log midpoint
  op.shape = {200000, 0, 0, 0};
  CHECK(*t.kernel_seconds(op, "optimizer.adam") == Approx(8e-2)); // proportional beyond
  op.shape = {500, 0, 0, 0};
  CHECK(*t.kernel_seconds(op, "optimizer.adam") == Approx(5e-4));
  CHECK_FALSE(t.kernel_seconds(op, "optimizer.sgd").has_value()); // another op: no entry
}

TEST_CASE("calibration: communication is looked up by span (one host, across hosts)", "[schedules][calibration]") {
  CalibrationBuilder b;
  b.add_comm_sample(OpKind::AllReduce, 2, 1e4, 1e-4, /*hosts=*/1); // measured inside one host
  b.add_comm_sample(OpKind::AllReduce, 2, 1e4, 3e-4, /*hosts=*/2); // and across two
  b.add_comm_sample(OpKind::Send, 2, 1e4, 2e-5, /*hosts=*/1);
  b.add_comm_sample(OpKind::AllGather, 4, 1e4, 5e-5); // span not known: stands for any
  const CalibrationTable t = b.build("cpu", "test");
  CHECK(*t.comm_seconds(OpKind::AllReduce, 2, 1e4, CommSpan::SameHost) == Approx(1e-4));
  CHECK(*t.comm_seconds(OpKind::AllReduce, 2, 1e4, CommSpan::CrossHost) == Approx(3e-4));
  CHECK(*t.comm_seconds(OpKind::Send, 2, 1e4, CommSpan::SameHost) == Approx(2e-5));
  // A one-host measurement never prices a transfer across hosts: the model applies.
  CHECK_FALSE(t.comm_seconds(OpKind::Send, 2, 1e4, CommSpan::CrossHost).has_value());
  CHECK_FALSE(t.comm_seconds(OpKind::Recv, 2, 1e4, CommSpan::CrossHost).has_value());
  CHECK(*t.comm_seconds(OpKind::AllGather, 4, 1e4, CommSpan::CrossHost) == Approx(5e-5));
  CHECK(*t.comm_seconds(OpKind::AllGather, 4, 1e4, CommSpan::SameHost) == Approx(5e-5));
  // Group-size interpolation keeps to the span: no cross-host entry at 4 → none at 3.
  CalibrationBuilder g;
  g.add_comm_sample(OpKind::AllReduce, 2, 1e4, 1e-4, 1);
  g.add_comm_sample(OpKind::AllReduce, 4, 1e4, 4e-4, 1);
  g.add_comm_sample(OpKind::AllReduce, 2, 1e4, 2e-4, 2);
  const CalibrationTable gt = g.build("cpu", "test");
  CHECK(*gt.comm_seconds(OpKind::AllReduce, 3, 1e4, CommSpan::SameHost) > 1e-4);
  CHECK_FALSE(gt.comm_seconds(OpKind::AllReduce, 3, 1e4, CommSpan::CrossHost).has_value());
  // "hosts" survives a round trip (version 4); entries without it read as not known.
  std::ostringstream out;
  write_calibration(t, out);
  CHECK(out.str().find("\"hosts\": 2") != std::string::npos);
  std::istringstream in(out.str());
  const CalibrationTable back = read_calibration(in, "span.json");
  CHECK(back.version == 4);
  CHECK_FALSE(back.comm_seconds(OpKind::Send, 2, 1e4, CommSpan::CrossHost).has_value());
  std::ostringstream again;
  write_calibration(back, again);
  CHECK(again.str() == out.str());
  std::istringstream v3(R"({"format":"twinscale-calibration","version":3,"source":"cpu","comms":[
    {"kind":"send","group_size":2,"bytes":100,"seconds":1e-5,"algbw_bytes_per_s":1e7,"busbw_bytes_per_s":1e7,
     "samples":1}]})");
  const CalibrationTable old = read_calibration(v3, "v3.json");
  CHECK(old.comms.at(0).hosts == 0);
  CHECK(*old.comm_seconds(OpKind::Send, 2, 100, CommSpan::CrossHost) == Approx(1e-5));
  std::istringstream bad(R"({"format":"twinscale-calibration","version":4,"comms":[
    {"kind":"send","group_size":2,"bytes":100,"seconds":1e-5,"algbw_bytes_per_s":1e7,"busbw_bytes_per_s":1e7,
     "samples":1,"hosts":0}]})");
  CHECK_THROWS_WITH(read_calibration(bad, "bad.json"),
                    Catch::Contains("bad.json") && Catch::Contains("comms[0]") && Catch::Contains("hosts"));
}
