// SC'21's pipeline scatter/gather (parallel.pp_scatter_gather): each send carries 1/tp of
// the activation and an all-gather over the TP group rebuilds it on arrival, with coupled
// and with decoupled (posted-ahead) receives.
#include <catch2/catch.hpp>

#include "config/job_file.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/op_counts.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::count_names;

TEST_CASE("SC'21 scatter/gather: pipeline sends carry 1/tp, all-gathered on arrival", "[schedules][lower]") {
  auto job = config::load_job_preset("tiny-interleaved");
  job.parallel.sequence_parallel = false;
  REQUIRE(job.parallel.tp > 1);
  REQUIRE(job.parallel.pp > 1);
  const auto first_recv = [](const Schedule& s) {
    for (const Op& op : s.programs[1].ops)
      if (op.kind == OpKind::Recv) return op.bytes;
    return 0.0;
  };
  const double full = first_recv(lower(job));
  job.parallel.pp_scatter_gather = true;
  const Schedule s = lower(job);
  CHECK(first_recv(s) == Approx(full / static_cast<double>(job.parallel.tp)));
  const auto names = count_names(s, s.programs[1], Phase::Forward);
  CHECK(names.count("pp.gather.activation") == 1);
  int recvs = 0, gathers = 0;
  for (const Op& op : s.programs[1].ops) {
    recvs += op.kind == OpKind::Recv;
    gathers += op.kind == OpKind::AllGather && op.group == GroupKind::Tp && s.names[op.name].rfind("pp.gather", 0) == 0;
  }
  CHECK(gathers == recvs);
  CHECK(validate(s).empty());
  job.parallel.sequence_parallel = true;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("parallel.pp_scatter_gather"));
}

TEST_CASE("SC'21 scatter/gather with decoupled pipeline receives: a receive posted ahead is gathered when its "
          "pass needs it, so the schedule runs",
          "[schedules][lower]") {
  for (const char* preset : {"tiny-interleaved", "tiny-1f1b"}) {
    INFO(preset);
    auto job = config::load_job_preset(preset);
    job.parallel.sequence_parallel = false;
    job.parallel.pp_scatter_gather = true;
    job.options.overlap.pp = true;
    REQUIRE(job.parallel.tp > 1);
    const Schedule s = lower(job);
    // (a receive posted one pass ahead used to put its gather on the TP stream before the
    // current pass's own TP collectives, which waited behind it: a deadlock)
    CHECK(validate(s).empty());
    for (const Program& p : s.programs) {
      int recvs = 0, gathers = 0;
      for (size_t i = 0; i < p.ops.size(); ++i) {
        const Op& op = p.ops[i];
        recvs += op.kind == OpKind::Recv;
        if (op.kind != OpKind::AllGather || s.names[op.name].rfind("pp.gather", 0) != 0) continue;
        ++gathers;
        // the gather reads its receive
        REQUIRE(op.dep_count == 1);
        CHECK(p.ops[p.deps[op.dep_begin]].kind == OpKind::Recv);
      }
      CHECK(gathers == recvs);
    }
  }
}
