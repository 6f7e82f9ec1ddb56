#include <catch2/catch.hpp>

#include "faults/checkpoint_policy.hpp"
#include "faults/error.hpp"
#include "faults/recovery_policy.hpp"

using namespace twinscale::faults;
using twinscale::topology::JobShape;

TEST_CASE("recovery: comm init calibrated on M9's 2,048-GPU figures predicts the O(n) method",
          "[faults][recovery][m9]") {
  const JobShape s2048{8, 32, 8}; // TP 8, DP 32, PP 8 (assumed shape of the 2,048-GPU run)
  const double tcp = calibrate_store_op_s(CommInitMethod::GlobalBarrierPerGroup, s2048, 1047);
  const double redis = calibrate_store_op_s(CommInitMethod::GlobalBarrierPerGroup, s2048, 361);
  CHECK(comm_init_s({CommInitMethod::GlobalBarrierPerGroup, tcp}, s2048) == Approx(1047));
  CHECK(comm_init_s({CommInitMethod::GlobalBarrierPerGroup, redis}, s2048) == Approx(361));
  // Not fitted: the local-barrier ordering with the same Redis per-operation cost.
  const double fast_2048 = comm_init_s({CommInitMethod::LocalBarrier, redis}, s2048);
  const double fast_12288 = comm_init_s({CommInitMethod::LocalBarrier, redis}, JobShape{8, 192, 8});
  INFO("local barrier: " << fast_2048 << " s at 2,048, " << fast_12288 << " s at 12,288");
  CHECK(fast_2048 < 5.0);   // M9: under 5 s on 2,048 GPUs
  CHECK(fast_12288 < 30.0); // M9: under 30 s on more than 10,000 GPUs
  CHECK(fast_12288 > 10.0); // and linear, not free
  // The baseline grows as N²: 6× the GPUs → ~36× the time (± the group-count mix).
  const double slow_12288 = comm_init_s({CommInitMethod::GlobalBarrierPerGroup, tcp}, JobShape{8, 192, 8});
  CHECK(slow_12288 / 1047 > 30);
  CHECK(slow_12288 / 1047 < 40);
}

TEST_CASE("recovery: detection latency by signal", "[faults][recovery]") {
  DetectionPolicy d;
  d.explicit_error_s = 15;
  d.heartbeat_period_s = 10;
  d.heartbeat_misses = 3;
  d.traffic_window_s = 120;
  d.silent_s = 7200;
  CHECK(d.latency_s(DetectionSignal::ExplicitError) == 15);
  CHECK(d.latency_s(DetectionSignal::MissedHeartbeat) == 30);
  CHECK(d.latency_s(DetectionSignal::TrafficDrop) == 120);
  CHECK(d.latency_s(DetectionSignal::None) == 7200);
}

TEST_CASE("checkpoint: GPT-175B state bytes and stage times", "[faults][checkpoint]") {
  twinscale::schedules::JobSpec job;
  job.model.layers = 96;
  job.model.hidden = 12288;
  job.model.heads = 96;
  job.model.seq_len = 2048;
  job.model.vocab = 64000;
  job.parallel.tp = 8;
  job.parallel.pp = 8;
  job.parallel.dp = 192;
  job.parallel.zero_stage = 2;
  const auto st = checkpoint_state(job);
  CHECK(st.parameters / 1e9 == Approx(174.7).epsilon(0.005));
  CHECK(st.unique_bytes / 1e12 == Approx(14 * 174.7e9 / 1e12).epsilon(0.005));
  CHECK(st.param_bytes_per_gpu == Approx(2 * st.parameters / 64));
  CHECK(st.optimizer_bytes_per_gpu == Approx(12 * st.parameters / 64 / 192));
  CheckpointPolicy p;
  p.storage.pcie_bw_bytes_per_s = 25e9;
  const auto every = checkpoint_times(p, st, CheckpointLoadMethod::EveryRankReads);
  const auto once = checkpoint_times(p, st, CheckpointLoadMethod::ReaderPerDpGroup);
  // Stage 1: (2 + 12/192)·P/64 bytes at 25 GB/s ≈ 0.23 s.
  CHECK(every.blocking_s == Approx((st.param_bytes_per_gpu + st.optimizer_bytes_per_gpu) / 25e9));
  // Stage 2: max(2.45 TB / 200 GB/s, per-node share / 12.5 GB/s).
  CHECK(every.persist_s == Approx(std::max(st.unique_bytes / 200e9, st.unique_bytes / 1536 / 12.5e9)));
  // M16: reading once per DP group avoids reading the parameters 192 times.
  CHECK(once.load_s < every.load_s / 10);
  p.async_persist = false;
  const auto sync = checkpoint_times(p, st, CheckpointLoadMethod::ReaderPerDpGroup);
  CHECK(sync.blocking_s == Approx(every.blocking_s + every.persist_s));
  CHECK(sync.persist_s == 0);
}

TEST_CASE("checkpoint and recovery: bad values are errors", "[faults][recovery][errors]") {
  CheckpointPolicy p;
  p.interval_s = 10;
  CHECK_THROWS_WITH(validate_checkpoint(p, CheckpointTimes{4, 20, 0}),
                    Catch::Contains("interval 10.0 s is shorter") && Catch::Contains("≥ 24.0 s"));
  p.interval_s = 100;
  p.storage.write_bw_bytes_per_s = 0;
  CHECK_THROWS_WITH(validate_checkpoint(p, CheckpointTimes{4, 20, 0}), Catch::Contains("write_bw_bytes_per_s"));
  RecoveryPolicy r;
  r.name = "x";
  r.detection.heartbeat_period_s = 0;
  CHECK_THROWS_WITH(validate_policy(r),
                    Catch::Contains("recovery policy 'x'") && Catch::Contains("heartbeat_period_s"));
  r.detection.heartbeat_period_s = 10;
  r.restart_s = -1;
  CHECK_THROWS_WITH(validate_policy(r), Catch::Contains("restart_s"));
  CHECK_THROWS_AS(checkpoint_state(0.0, JobShape{1, 1, 1}, false), FaultError);
}
