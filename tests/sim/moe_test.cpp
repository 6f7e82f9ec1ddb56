// In the simulator: the expert-parallel all-to-alls and ZeRO-3's per-layer
// collectives run in both modes, the aggregated (symmetric) run agrees with the full one,
// routing imbalance costs time, ZeRO-3's prefetch hides gathers.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "sim_test_util.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
using namespace twinscale::sim;
using namespace twinscale::sim::test;

namespace {

struct Run {
  double iteration_s = 0;
  double compute_s = 0;
};

/// `job` on tiny-2tier, placed linearly, with options `o`.
Run simulate_job(const schedules::JobSpec& job, const SimOptions& o) {
  auto spec = tiny_cluster();
  spec.gpus = job.parallel.gpus();
  const topology::Fabric fabric(spec);
  const schedules::Schedule s = schedules::lower(job);
  const auto gpus = topology::place(fabric, {job.parallel.tp, job.parallel.dp, job.parallel.pp},
                                    topology::PlacementPolicy::Linear, 1);
  const auto r = simulate(s, fabric, gpus, o);
  return {r.iteration_time_s, r.breakdown.compute_s};
}

Run simulate_job(const schedules::JobSpec& job, SimMode mode, bool aggregate) {
  SimOptions o;
  o.mode = mode;
  o.aggregate = aggregate;
  return simulate_job(job, o);
}

/// tiny-fsdp with layers large enough that communication and compute overlap.
schedules::JobSpec larger_fsdp() { return with_larger_layers(config::load_job_preset("tiny-fsdp"), 2048, 16, 1024); }

} // namespace

TEST_CASE("tiny-moe, tiny-fsdp and tiny-moe-hier simulate in both modes, aggregated agrees with every rank executed",
          "[sim][moe]") {
  for (const char* preset : {"tiny-moe", "tiny-fsdp", "tiny-moe-hier", "tiny-moe-node-limited", "tiny-moe-folded"}) {
    const auto job = config::load_job_preset(preset);
    for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
      const Run a = simulate_job(job, mode, true);
      const Run f = simulate_job(job, mode, false);
      INFO(preset << " mode " << to_string(mode) << " aggregated " << a.iteration_s << " full " << f.iteration_s);
      CHECK(a.iteration_s > 0);
      CHECK(a.iteration_s == Approx(f.iteration_s).epsilon(2e-3));
      CHECK(a.compute_s == Approx(f.compute_s).epsilon(2e-3));
    }
  }
}

TEST_CASE("ZeRO-3 costs more communication than ZeRO-1 and prefetching hides some of it", "[sim][moe]") {
  auto job = larger_fsdp();
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double prefetched = simulate_job(job, mode, true).iteration_s;
    auto blocking = job;
    blocking.options.fsdp_prefetch = 0;
    auto zero1 = job;
    zero1.parallel.zero_stage = 1;
    const double b = simulate_job(blocking, mode, true).iteration_s;
    const double z1 = simulate_job(zero1, mode, true).iteration_s;
    INFO("mode " << to_string(mode) << " zero-3 prefetched " << prefetched << " blocking " << b << " zero-1 " << z1);
    CHECK(prefetched < b);
    CHECK(z1 < b);
  }
}

TEST_CASE("routing imbalance lengthens a MoE iteration, wider expert parallelism moves more bytes", "[sim][moe]") {
  auto job = config::load_job_preset("tiny-moe");
  // larger sizes so that the experts and the all-to-alls are not lost in launch latencies
  job.model.hidden = 2048;
  job.model.heads = 16;
  job.model.kv_heads = 4;
  job.model.seq_len = 1024;
  job.model.ffn_hidden = 4096;
  job.model.moe_ffn_hidden = 2048;
  job.model.routing = schedules::RoutingKind::Balanced;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const double balanced = simulate_job(job, mode, true).iteration_s;
    auto skewed = job;
    skewed.model.routing = schedules::RoutingKind::Dirichlet;
    skewed.model.routing_alpha = 0.2;
    const double imbalanced = simulate_job(skewed, mode, true).iteration_s;
    INFO("mode " << to_string(mode) << " balanced " << balanced << " imbalanced " << imbalanced);
    CHECK(imbalanced > balanced * 1.01);
  }
}

TEST_CASE("hierarchical all-to-all across servers: both modes, aggregated as close to every rank as flat",
          "[sim][moe]") {
  // 32 GPUs (4 servers of 8), tp1 dp32, EP groups of 16 ranks on two servers each: the
  // flat all-to-all crosses servers from every GPU to 8 peers; the hierarchical one runs
  // inside each server, then between the two GPUs of each local index (one rail)
  auto flat = config::load_job_preset("tiny-moe-hier");
  flat.parallel.pp = 1;
  flat.parallel.dp = 32;
  flat.parallel.ep = 16;
  flat.model.experts = 16;
  flat.parallel.global_batch = 32;
  flat.model.hidden = 1024;
  flat.model.heads = 8;
  flat.model.seq_len = 512;
  flat.model.moe_ffn_hidden = 1024;
  flat.parallel.ep_a2a = schedules::EpAllToAll::Flat;
  flat.parallel.ep_node = 0;
  auto hier = flat;
  hier.parallel.ep_a2a = schedules::EpAllToAll::Hierarchical;
  hier.parallel.ep_node = 8;
  auto two_servers = hier;
  two_servers.parallel.ep_node = 16; // a "domain" of two servers: its NVLink phase would cross the network
  auto limited = hier;
  limited.parallel.max_nodes_per_token = 1; // each token's 2 experts on one server: half the rail bytes
  // With EP groups across servers the aggregated run of the flat all-to-all already differs
  // from the every-rank one (by the same time in both variants: not the all-to-all's
  // groups); the hierarchical groups add no difference of their own.
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const Run f = simulate_job(flat, mode, true);
    const Run ff = simulate_job(flat, mode, false);
    const Run h = simulate_job(hier, mode, true);
    const Run hf = simulate_job(hier, mode, false);
    const Run l = simulate_job(limited, mode, true);
    const Run lf = simulate_job(limited, mode, false);
    INFO("mode " << to_string(mode) << " flat " << f.iteration_s << " (every rank " << ff.iteration_s
                 << ") hierarchical " << h.iteration_s << " (" << hf.iteration_s << ") node-limited " << l.iteration_s
                 << " (" << lf.iteration_s << ")");
    CHECK(h.iteration_s > 0);
    CHECK(h.iteration_s - hf.iteration_s == Approx(f.iteration_s - ff.iteration_s).margin(1e-6));
    CHECK(l.iteration_s - lf.iteration_s == Approx(f.iteration_s - ff.iteration_s).margin(1e-6));
    CHECK(h.iteration_s != f.iteration_s); // the two phases are simulated, not the flat group
    CHECK_THROWS_WITH(simulate_job(two_servers, mode, true),
                      Catch::Contains("parallel.ep_node = 16 (tp 1): the NVLink phase of the hierarchical all-to-all "
                                      "puts rank 0 (server 0) and rank 8 (server 1) in one domain") &&
                          Catch::Contains("valid: ep_node · tp ≤ 8"));
    CHECK(l.iteration_s < h.iteration_s); // half the bytes on the rails
  }
}

TEST_CASE("hierarchical all-to-all with tp 2: both modes, aggregated agrees with every rank as flat does",
          "[sim][moe]") {
  // 32 GPUs, tp 2 (sequence parallel), dp 16, EP groups of 8 over two servers, 4 EP ranks
  // (8 GPUs) per server: the image groups of the two phases must cover both TP ranks
  auto flat = config::load_job_preset("tiny-moe-hier");
  flat.parallel.tp = 2;
  flat.parallel.sequence_parallel = true;
  flat.parallel.pp = 1;
  flat.parallel.dp = 16;
  flat.parallel.ep = 8;
  flat.model.experts = 16;
  flat.parallel.global_batch = 32;
  flat.model.seq_len = 256;
  flat.parallel.ep_a2a = schedules::EpAllToAll::Flat;
  flat.parallel.ep_node = 0;
  auto hier = flat;
  hier.parallel.ep_a2a = schedules::EpAllToAll::Hierarchical;
  hier.parallel.ep_node = 4;
  auto limited = hier;
  limited.parallel.max_nodes_per_token = 1;
  for (SimMode mode : {SimMode::Analytic, SimMode::Flow}) {
    const Run f = simulate_job(flat, mode, true), ff = simulate_job(flat, mode, false);
    const Run h = simulate_job(hier, mode, true), hf = simulate_job(hier, mode, false);
    const Run l = simulate_job(limited, mode, true), lf = simulate_job(limited, mode, false);
    INFO("mode " << to_string(mode) << " flat " << f.iteration_s << " (every rank " << ff.iteration_s
                 << ") hierarchical " << h.iteration_s << " (" << hf.iteration_s << ") node-limited " << l.iteration_s
                 << " (" << lf.iteration_s << ")");
    CHECK(h.iteration_s != f.iteration_s);
    CHECK(h.iteration_s - hf.iteration_s == Approx(f.iteration_s - ff.iteration_s).margin(1e-6));
    CHECK(l.iteration_s - lf.iteration_s == Approx(f.iteration_s - ff.iteration_s).margin(1e-6));
    CHECK(l.iteration_s < h.iteration_s);
  }
  auto bad = hier;
  bad.parallel.ep_node = 8; // 8 EP ranks × tp 2 = 16 GPUs: two servers
  CHECK_THROWS_WITH(simulate_job(bad, SimMode::Analytic, true),
                    Catch::Contains("parallel.ep_node = 8 (tp 2)") && Catch::Contains("valid: ep_node · tp ≤ 8"));
}

TEST_CASE("tiny-fsdp: FSDP's collectives take NCCL's CTAs, so compute overlapped with them slows", "[sim][fsdp]") {
  // the same job with every communication kernel taking the channels asked for (a fixed
  // slowdown equal to theirs) runs faster than with the CTAs NCCL plans for the
  // data-parallel group (two servers' GPUs of tiny-2tier)
  const auto job = larger_fsdp();
  SimOptions o;
  o.mode = SimMode::Analytic;
  const double planned = simulate_job(job, o).iteration_s;
  o.device.nccl_compute_slowdown = DeviceModelParams::nccl_slowdown(tiny_cluster().gpu, o.channels);
  const double asked = simulate_job(job, o).iteration_s;
  INFO("planned CTAs " << planned << " s, asked channels " << asked << " s");
  CHECK(planned > asked);
}
