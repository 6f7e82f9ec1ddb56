// Trace comparison (per op kind and rank) and calibration from a trace, on records
// built by hand for the synthetic schedule.
#include <sstream>

#include <catch2/catch.hpp>

#include "diagnose/trace_compare.hpp"
#include "schedules/error.hpp"
#include "schedules/synthetic.hpp"
#include "schedules/trace.hpp"

using namespace twinscale;

namespace {

std::vector<schedules::TraceRecord> records(const schedules::Schedule& s, double scale) {
  std::vector<schedules::TraceRecord> out;
  for (int64_t r = 0; r < s.world(); ++r) {
    double t = 0;
    const auto& prog = s.program(r);
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      schedules::TraceRecord rec;
      rec.rank = r;
      rec.op_index = i;
      rec.kind = prog.ops[i].kind;
      rec.stream = prog.ops[i].stream;
      rec.name = s.names[prog.ops[i].name];
      rec.start_s = t;
      rec.duration_s = scale * (prog.ops[i].is_communication() ? 2e-3 : 1e-3);
      rec.bytes = prog.ops[i].bytes;
      t += rec.duration_s;
      out.push_back(rec);
    }
  }
  return out;
}

} // namespace

TEST_CASE("compare: per-kind and per-rank errors of B against A") {
  const auto s = schedules::synthetic_schedule(schedules::Layout{2, 1, 2}, {2, 16, 8, 1});
  const auto a = records(s, 1.0);
  auto b = records(s, 1.1);
  b.pop_back();
  const diagnose::TraceComparison c = diagnose::compare_traces(a, "a.json", b, "b.json");
  CHECK(c.matched == static_cast<int64_t>(a.size()) - 1);
  CHECK(c.only_a == 1);
  CHECK(c.only_b == 0);
  REQUIRE(!c.kinds.empty());
  for (const auto& k : c.kinds) {
    CHECK(k.mean_rel_error == Approx(0.1));
    CHECK(k.max_abs_rel_error == Approx(0.1));
  }
  CHECK(c.b_span_s == Approx(1.1 * c.a_span_s).epsilon(0.01));
  REQUIRE(c.ranks.size() == 4);
  CHECK(c.ranks[0].rel_error == Approx(0.1));
  b = records(s, 1.0);
  b[3].name = "something.else";
  CHECK_THROWS_WITH(diagnose::compare_traces(a, "a.json", b, "b.json"),
                    Catch::Contains("rank 0 op 3") && Catch::Contains("b.json") &&
                        Catch::Contains("not of the same schedule"));
}

TEST_CASE("calibrate: medians per kernel shape and bandwidth per collective") {
  const auto s = schedules::synthetic_schedule(schedules::Layout{2, 1, 2}, {2, 16, 8, 1});
  const auto t = diagnose::calibrate_from_trace(records(s, 1.0), "t.json", s, "cuda", "test gpu", 1);
  // Entries are keyed by the schedule's op name as well (calibration version 2).
  const schedules::KernelTiming* g = nullptr;
  for (const auto& k : t.kernels)
    if (k.kernel == schedules::Kernel::Gemm && k.shape == std::array<int64_t, 4>{8, 16, 16, 0}) g = &k;
  REQUIRE(g != nullptr);
  CHECK(!g->op.empty());
  CHECK(t.find_kernel(schedules::Kernel::Gemm, schedules::DType::BF16, {8, 16, 16, 0}, g->op) == g);
  CHECK(g->seconds == Approx(1e-3));
  const auto* ar = t.find_comm(schedules::OpKind::AllReduce, 2, 2.0 * 8 * 16);
  REQUIRE(ar != nullptr);
  CHECK(ar->algbw_bytes_per_s == Approx(256.0 / 2e-3));
  CHECK(ar->busbw_bytes_per_s == Approx(256.0 / 2e-3));             // 2(n−1)/n = 1 at n = 2
  CHECK(t.find_comm(schedules::OpKind::Send, 2, 256.0) != nullptr); // p2p links, group size 2
  // CPU traces: executed shapes (divided) in fp32.
  const auto c = diagnose::calibrate_from_trace(records(s, 1.0), "t.json", s, "cpu", "cpu", 4);
  CHECK(c.find_kernel(schedules::Kernel::Gemm, schedules::DType::FP32, {2, 4, 4, 0}, g->op) != nullptr);
  auto bad = records(s, 1.0);
  bad[0].op_index = 9999;
  CHECK_THROWS_WITH(diagnose::calibrate_from_trace(bad, "t.json", s, "cuda", "x", 1),
                    Catch::Contains("t.json") && Catch::Contains("not in the schedule"));
}

TEST_CASE("compare: a collective is timed as its instance, last end - last start, in both traces (waits excluded)") {
  // Data parallelism only: every rank runs the same program, so in B (the simulator's
  // semantics here) every member starts each collective at once. In A rank 0 reaches every
  // collective 5 ms early and waits for rank 1 inside it (a real run's skew): its ops
  // last 5 ms longer, the transfers once both had started are B's.
  const auto s = schedules::synthetic_schedule(schedules::Layout{1, 2, 1}, {2, 16, 8, 1});
  auto trace_of = [&](bool skewed) {
    schedules::Trace t;
    t.source = "test";
    for (int64_t r = 0; r < s.world(); ++r) {
      double at = 0;
      const auto& prog = s.program(r);
      for (uint32_t i = 0; i < prog.ops.size(); ++i) {
        const bool comm = prog.ops[i].is_communication();
        const double d = comm ? 2e-3 : 1e-3;
        // the data-parallel collectives: groups of two ranks (the others here are groups of one)
        const bool shared = prog.ops[i].is_collective() && prog.ops[i].group == schedules::GroupKind::Dp;
        const double early = skewed && r == 0 && shared ? 5e-3 : 0;
        t.events.push_back({r, i, at + 10e-3 - early, at + 10e-3 + d, false});
        at += d;
      }
    }
    std::stringstream ss;
    schedules::write_chrome_trace(t, s, ss);
    std::istringstream in(ss.str());
    return schedules::read_chrome_trace(in, skewed ? "a.json" : "b.json");
  };
  const auto a = trace_of(true), b = trace_of(false);
  const diagnose::TraceComparison c = diagnose::compare_traces(a, "a.json", b, "b.json");
  bool collectives = false;
  for (const auto& k : c.kinds) {
    INFO(k.kind);
    schedules::Op op;
    op.kind = schedules::op_kind_from_string(k.kind).value();
    if (!op.is_collective()) {
      CHECK_FALSE(k.waits_excluded);
      CHECK(k.median_abs_rel_error == Approx(0).margin(1e-9));
      continue;
    }
    collectives = true;
    CHECK(k.waits_excluded);
    CHECK(k.median_abs_rel_error == Approx(0).margin(1e-6)); // the same transfers
    CHECK(k.a_mean_s == Approx(2e-3));
    CHECK(k.max_abs_rel_error == Approx(0).margin(1e-6));
  }
  CHECK(collectives);
  // Calibrated from the skewed trace, a collective's entry is its transfer, not rank 0's wait.
  const auto table = diagnose::calibrate_from_trace(a, "a.json", s, "cuda", "test gpu", 1);
  REQUIRE(!table.comms.empty());
  for (const auto& e : table.comms) {
    schedules::Op op;
    op.kind = e.kind;
    if (op.is_collective()) CHECK(e.seconds == Approx(2e-3));
  }
  // Records without instances (traces written before them): each op's own duration.
  auto a_old = a;
  for (auto& r : a_old) r.instance.clear();
  for (const auto& k : diagnose::compare_traces(a_old, "old.json", b, "b.json").kinds) {
    INFO(k.kind);
    CHECK_FALSE(k.waits_excluded);
    CHECK(k.median_abs_rel_error == Approx(k.op_median_abs_rel_error));
    // rank 0's data-parallel all-reduces: 7 ms with the wait against 2 ms (−71 %)
    if (k.kind == "all_reduce") CHECK(k.max_abs_rel_error == Approx(5.0 / 7.0));
  }
}
