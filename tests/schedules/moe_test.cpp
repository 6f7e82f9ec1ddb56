// Mixture of experts with expert parallelism, and RMSNorm (issue #16): groups, routing
// imbalance, lowered ops, parameters and the errors of bad MoE jobs.
#include <catch2/catch.hpp>

#include <cmath>
#include <map>
#include <set>

#include "config/job_file.hpp"
#include "schedules/detail/moe_routing.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"

using namespace twinscale;
using namespace twinscale::schedules;

namespace {
std::vector<const Op*> ops_named(const Schedule& s, const Program& p, const std::string& name, Phase phase) {
  std::vector<const Op*> out;
  for (const Op& op : p.ops)
    if (s.names[op.name] == name && op.labels.phase == phase) out.push_back(&op);
  return out;
}
} // namespace

TEST_CASE("expert-parallel groups: ep blocks of dp, expert holders across tp and blocks", "[schedules][moe]") {
  const Layout L{2, 8, 2, 4}; // tp 2, dp 8, pp 2, ep 4
  CHECK(L.group_size(GroupKind::Ep) == 4);
  CHECK(L.group_size(GroupKind::ExpertDp) == 2 * 2);
  std::set<std::vector<int64_t>> ep_groups, edp_groups;
  for (int64_t r = 0; r < L.world(); ++r) {
    const auto c = L.coord(r);
    const auto ep = L.group_members(GroupKind::Ep, r);
    REQUIRE(ep.size() == 4);
    CHECK(ep[static_cast<size_t>(L.group_rank(GroupKind::Ep, r))] == r);
    for (int64_t m : ep) {
      const auto mc = L.coord(m);
      CHECK((mc.tp == c.tp && mc.pp == c.pp && mc.dp / 4 == c.dp / 4)); // same block of ep dp ranks
    }
    const auto edp = L.group_members(GroupKind::ExpertDp, r);
    REQUIRE(edp.size() == 4);
    CHECK(edp[static_cast<size_t>(L.group_rank(GroupKind::ExpertDp, r))] == r);
    for (int64_t m : edp) {
      const auto mc = L.coord(m);
      CHECK((mc.pp == c.pp && mc.dp % 4 == c.dp % 4)); // the same experts
    }
    ep_groups.insert(ep);
    edp_groups.insert(edp);
  }
  CHECK(ep_groups.size() == static_cast<size_t>(L.world() / 4)); // a partition of the ranks
  CHECK(edp_groups.size() == static_cast<size_t>(L.world() / 4));
}

TEST_CASE("routing imbalance: balanced is 1, draws are seeded, skew raises the busiest rank's load",
          "[schedules][moe]") {
  ModelSpec m;
  m.experts = 64;
  m.top_k = 2;
  CHECK(detail::hottest_rank_load(m, 8, 0, 0, 0) == 1.0);
  m.routing = RoutingKind::Dirichlet;
  auto mean_load = [&](double alpha) {
    m.routing_alpha = alpha;
    double sum = 0;
    for (int mb = 0; mb < 200; ++mb) sum += detail::hottest_rank_load(m, 8, 0, mb, 3);
    return sum / 200;
  };
  const double skewed = mean_load(0.1), mild = mean_load(10), flat = mean_load(1e5);
  CHECK(skewed > mild);
  CHECK(mild > flat);
  CHECK(flat == Approx(1).epsilon(0.02));
  for (double x : {skewed, mild}) CHECK(x > 1);
  CHECK(skewed <= 8); // the whole EP group's tokens at most
  // deterministic per (seed, iteration, micro-batch, layer); another seed draws anew
  m.routing_alpha = 0.5;
  const double a = detail::hottest_rank_load(m, 8, 1, 2, 3);
  CHECK(detail::hottest_rank_load(m, 8, 1, 2, 3) == a);
  CHECK(detail::hottest_rank_load(m, 8, 1, 2, 4) != a);
  m.routing_seed = 99;
  CHECK(detail::hottest_rank_load(m, 8, 1, 2, 3) != a);
  // a capacity factor c caps each expert at c/experts of the tokens: the busiest rank
  // takes at most c times its balanced share
  m.capacity_factor = 1.25;
  for (int mb = 0; mb < 50; ++mb) CHECK(detail::hottest_rank_load(m, 8, 0, mb, 0) <= 1.25 + 1e-12);
  // Zipf: the steeper the popularity law, the busier the hottest rank
  m.capacity_factor = 0;
  m.routing = RoutingKind::Zipf;
  m.routing_exponent = 0.01;
  const double near_flat = detail::hottest_rank_load(m, 8, 0, 0, 0);
  m.routing_exponent = 3;
  const double steep = detail::hottest_rank_load(m, 8, 0, 0, 0);
  CHECK(near_flat == Approx(1).epsilon(0.05));
  CHECK(steep > 2);
}

TEST_CASE("tiny-moe lowers: all-to-alls over ep, experts sized by the routing draw, validated", "[schedules][moe]") {
  const JobSpec job = config::load_job_preset("tiny-moe");
  const Schedule s = lower(job);
  CHECK(s.layout.ep == 2);
  CHECK(validate(s).empty());
  ValidateOptions per_rank;
  per_rank.use_symmetry = false;
  CHECK(validate(s, per_rank).empty());
  const int64_t T = job.parallel.micro_batch * job.model.seq_len / job.parallel.tp; // sequence-parallel tokens
  const int64_t k = job.model.top_k, h = job.model.hidden;
  const int64_t M = job.parallel.micro_batches();
  for (int64_t p = 0; p < job.parallel.pp; ++p) {
    const Program& prog = s.programs[static_cast<size_t>(p)];
    const int64_t moe_layers = p == 0 ? 1 : 2; // layer 0 is dense (first_dense_layers = 1)
    const auto dispatch = ops_named(s, prog, "moe.dispatch.a2a", Phase::Forward);
    const auto fc1 = ops_named(s, prog, "moe.expert.fc1", Phase::Forward);
    REQUIRE(static_cast<int64_t>(dispatch.size()) == M * moe_layers);
    REQUIRE(fc1.size() == dispatch.size());
    CHECK(static_cast<int64_t>(ops_named(s, prog, "moe.combine.a2a", Phase::Forward).size()) == M * moe_layers);
    CHECK(static_cast<int64_t>(ops_named(s, prog, "moe.dispatch.bwd.a2a", Phase::Backward).size()) == M * moe_layers);
    CHECK(ops_named(s, prog, "mlp.fc1", Phase::Forward).size() == static_cast<size_t>(p == 0 ? M : 0));
    std::set<double> loads;
    for (size_t i = 0; i < dispatch.size(); ++i) {
      const Op& a2a = *dispatch[i];
      CHECK(a2a.kind == OpKind::AllToAll);
      CHECK(a2a.group == GroupKind::Ep);
      const double load =
          detail::hottest_rank_load(job.model, 2, a2a.labels.iteration, a2a.labels.micro_batch, a2a.labels.layer);
      loads.insert(load);
      CHECK(a2a.bytes == Approx(static_cast<double>(T * k * h) * 2 * load));
      // the expert GEMM of the same (micro-batch, layer) processes the busiest rank's rows
      const Op& g = *fc1[i];
      CHECK(g.labels.layer == a2a.labels.layer);
      CHECK(g.shape[0] == std::llround(static_cast<double>(T * k) * load));
      CHECK(g.shape[1] == 2 * job.model.moe_ffn_hidden); // SwiGLU: gate and up
      CHECK(load >= 1.0);
    }
    CHECK(loads.size() > 1); // drawn per micro-batch and layer
    // expert gradients are reduced over the expert holders, the rest over DP
    int edp = 0;
    for (const Op& op : prog.ops) edp += op.group == GroupKind::ExpertDp && op.kind == OpKind::ReduceScatter;
    CHECK(edp == 1);
  }
}

TEST_CASE("MoE parameters: routed experts are whole per EP rank and sharded over their holders", "[schedules][moe]") {
  JobSpec job = config::load_job_preset("tiny-moe");
  const double h = 256, fm = 256;
  const double one_expert = h * 2 * fm + fm * h;            // SwiGLU FC1 (gate, up) and FC2, no biases
  CHECK(layer_expert_parameters(job, 0) == 0);              // the dense first layer
  CHECK(layer_expert_parameters(job, 1) == 4 * one_expert); // 8 experts over ep 2
  CHECK(chunk_expert_parameters(job, 1, 0) == 2 * 4 * one_expert);
  const double n = stage_parameters(job, 1), experts = chunk_expert_parameters(job, 1, 0);
  const MemoryEstimate mem = estimate_memory(job, 1);
  // ZeRO-1: optimizer state of dense parameters over dp, of experts over tp·dp/ep holders
  CHECK(mem.optimizer_bytes == Approx(12 * ((n - experts) / 2 + experts / 2)));
  job.parallel.ep = 1; // every rank holds all 8 experts
  CHECK(layer_expert_parameters(job, 1) == 8 * one_expert);
}

TEST_CASE("RMSNorm: its own kernel, no LayerNorm passes, no bias parameters", "[schedules][moe]") {
  JobSpec job = config::load_job_preset("tiny-1f1b");
  const double before = stage_parameters(job, 0);
  job.model.norm = NormKind::RmsNorm;
  const Schedule s = lower(job);
  int rms = 0, ln = 0;
  for (const Op& op : s.programs[0].ops) {
    rms += op.kernel == Kernel::RmsNorm;
    ln += op.kernel == Kernel::LayerNorm || op.kernel == Kernel::FusedLayerNorm;
  }
  CHECK(rms > 0);
  CHECK(ln == 0);
  CHECK(validate(s).empty());
  // two norms per layer lose their h biases: 2 layers on stage 0
  CHECK(before - stage_parameters(job, 0) == Approx(2 * 2 * 256));
}

TEST_CASE("bad MoE jobs are refused naming the key and what would be valid", "[schedules][moe]") {
  const JobSpec base = config::load_job_preset("tiny-moe");
  auto refused = [&](auto edit, const char* words) {
    JobSpec job = base;
    edit(job);
    CHECK_THROWS_WITH(lower(job), Catch::Contains(words));
  };
  refused([](JobSpec& j) { j.parallel.ep = 3; }, "parallel.ep = 3 must divide parallel.dp");
  refused([](JobSpec& j) { j.model.experts = 5; }, "is not divisible by parallel.ep");
  refused([](JobSpec& j) { j.model.top_k = 9; }, "model.top_k = 9");
  refused([](JobSpec& j) { j.parallel.sequence_parallel = false; }, "needs parallel.sequence_parallel = true");
  refused([](JobSpec& j) { j.model.capacity_factor = 0.5; }, "model.capacity_factor");
  refused([](JobSpec& j) { j.model.block = BlockKind::Parallel; }, "model.block");
  refused([](JobSpec& j) { j.model.experts = 0; }, "parallel.ep = 2 > 1 needs model.experts > 0");
}
