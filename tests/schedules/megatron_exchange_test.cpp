// Megatron's blocking interleaved exchange (schedules/detail/megatron_exchange.hpp): the
// receive flags pair every message with one receive, a steady-state forward's output is
// sent after the following backward, and the lowered schedules run.
#include <catch2/catch.hpp>

#include <map>

#include "config/job_file.hpp"
#include "schedules/detail/megatron_exchange.hpp"
#include "schedules/pipeline.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::detail::megatron_exchange_after;

TEST_CASE("Megatron exchange: every message a rank sends is received by exactly one exchange of its peer",
          "[schedules][pipeline]") {
  struct Case {
    int64_t pp, vpp, m;
  };
  for (const Case c :
       {Case{2, 2, 2}, Case{2, 3, 8}, Case{4, 2, 4}, Case{4, 2, 8}, Case{4, 3, 28}, Case{8, 3, 16}, Case{35, 3, 70}}) {
    INFO("pp " << c.pp << " vpp " << c.vpp << " micro-batches " << c.m);
    std::map<std::pair<int64_t, int64_t>, int64_t> sent, received; // (src, dst)
    for (int64_t r = 0; r < c.pp; ++r) {
      const auto order = pipeline_order(PipelineKind::Interleaved, c.pp, c.vpp, c.m, r);
      if (r > 0) ++received[{r - 1, r}]; // recv_forward before the warm-up
      int64_t deferred = 0;
      for (size_t j = 0; j < order.size(); ++j) {
        const auto& st = order[j];
        const int64_t vs = st.chunk * c.pp + r;
        if (st.forward && vs < c.pp * c.vpp - 1) ++sent[{r, (r + 1) % c.pp}];
        if (!st.forward && vs > 0) ++sent[{r, (r - 1 + c.pp) % c.pp}];
        const auto e = megatron_exchange_after(c.pp, c.vpp, c.m, r, static_cast<int64_t>(j));
        if (!e.after) {
          // only a steady-state forward, whose output waits for the next backward
          CHECK(st.forward);
          REQUIRE(j + 1 < order.size());
          CHECK_FALSE(order[j + 1].forward);
          ++deferred;
          continue;
        }
        if (e.recv_prev) ++received[{(r - 1 + c.pp) % c.pp, r}];
        if (e.recv_next) ++received[{(r + 1) % c.pp, r}];
      }
      const int64_t warmup = pipeline_warmup(PipelineKind::Interleaved, c.pp, c.vpp, c.m, r);
      CHECK(deferred == c.m * c.vpp - warmup);
    }
    CHECK(sent == received);
  }
}

TEST_CASE("Megatron exchange: coupled interleaved schedules validate and run, the forward's send after the backward",
          "[schedules][lower]") {
  for (const bool scatter_gather : {false, true}) {
    for (const int64_t batch : {8, 16, 32}) {
      INFO("scatter/gather " << scatter_gather << ", global batch " << batch);
      JobSpec job = config::load_job_preset("tiny-interleaved");
      job.parallel.pp = 4;
      job.parallel.dp = 2;
      job.model.layers = 8;
      job.parallel.sequence_parallel = false;
      job.parallel.pp_scatter_gather = scatter_gather;
      job.parallel.global_batch = batch;
      REQUIRE_FALSE(job.options.overlap.pp);
      const Schedule s = lower(job);
      CHECK(validate(s).empty());
      // rank 0's first steady-state forward (micro-batch index = its warm-up count) sends
      // its activation only after the backward that follows it
      const auto& ops = s.programs[0].ops;
      const int64_t warmup =
          pipeline_warmup(PipelineKind::Interleaved, 4, job.parallel.vpp, job.parallel.micro_batches(), 0);
      if (warmup == job.parallel.micro_batches() * job.parallel.vpp) continue; // all warm-up: no steady state
      int64_t sends = 0;
      bool backward_seen = false;
      for (const Op& op : ops) {
        if (op.stream == Stream::Compute && op.labels.phase == Phase::Backward) backward_seen = true;
        if (op.kind == OpKind::Send && s.names[op.name] == "pp.send.activation") {
          if (sends == warmup) CHECK(backward_seen); // the deferred one
          if (sends < warmup) CHECK_FALSE(backward_seen);
          ++sends;
        }
      }
      CHECK(sends > warmup);
    }
  }
}
