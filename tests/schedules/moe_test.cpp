// Mixture of experts with expert parallelism, and RMSNorm: groups, routing
// imbalance, lowered ops, parameters and the errors of bad MoE jobs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/detail/moe_routing.hpp"
#include "schedules/error.hpp"
#include "schedules/execution_rules.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/check_valid.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

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
  check_valid(s);
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

TEST_CASE("hierarchical all-to-all groups: NVLink domains of ep_node inside each EP block, rails across them",
          "[schedules][moe]") {
  const Layout L{2, 8, 2, 8, 1, 4}; // tp 2, dp 8, pp 2, ep 8, domains of 4 EP ranks
  CHECK(L.hierarchical_ep());
  CHECK(L.group_size(GroupKind::EpNode) == 4);
  CHECK(L.group_size(GroupKind::EpRail) == 2);
  // rank 1 = (tp 1, dp 0, pp 0); rank 11 = (tp 1, dp 5, pp 0)
  CHECK(L.group_members(GroupKind::EpNode, 1) == std::vector<int64_t>{1, 3, 5, 7});
  CHECK(L.group_members(GroupKind::EpNode, 11) == std::vector<int64_t>{9, 11, 13, 15});
  CHECK(L.group_members(GroupKind::EpRail, 11) == std::vector<int64_t>{3, 11});
  CHECK(L.group_rank(GroupKind::EpNode, 11) == 1);
  CHECK(L.group_rank(GroupKind::EpRail, 11) == 1);
  for (int64_t r = 0; r < L.world(); ++r)
    for (GroupKind g : {GroupKind::EpNode, GroupKind::EpRail}) {
      const auto m = L.group_members(g, r);
      CHECK(m[static_cast<size_t>(L.group_rank(g, r))] == r);
      // every member is in the rank's EP group
      const auto ep = L.group_members(GroupKind::Ep, r);
      for (int64_t x : m) CHECK(std::find(ep.begin(), ep.end(), x) != ep.end());
    }
  CHECK_FALSE((Layout{2, 8, 2, 8, 1, 8}.hierarchical_ep())); // one domain: flat
  CHECK_FALSE((Layout{2, 8, 2, 8, 1, 1}.hierarchical_ep())); // one rank per domain: flat
}

TEST_CASE("the two phases of the hierarchical all-to-all deliver every (source, destination) pair of the EP group "
          "exactly once, and the execution rules agree with the layout",
          "[schedules][moe]") {
  // 2DH routing on the groups alone: source s sends the block for destination d to its
  // domain peer of d's local index (phase 1, ep_node), which forwards it to the member of
  // its rail of d's domain index (phase 2, ep_rail). That member must be d, every pair must
  // travel, and no rail hop may stay inside a domain. The combine is the same two hops
  // reversed (rail, then domain).
  for (const Layout& L :
       {Layout{2, 8, 2, 8, 1, 4}, Layout{1, 16, 1, 16, 1, 8}, Layout{4, 12, 1, 6, 1, 3}, Layout{1, 8, 3, 4, 1, 2}}) {
    INFO("tp " << L.tp << " dp " << L.dp << " pp " << L.pp << " ep " << L.ep << " ep_node " << L.ep_node);
    REQUIRE(L.hierarchical_ep());
    int64_t pairs = 0;
    for (int64_t s = 0; s < L.world(); ++s) {
      for (GroupKind g : {GroupKind::EpNode, GroupKind::EpRail}) {
        const auto members = L.group_members(g, s);
        REQUIRE(static_cast<int64_t>(members.size()) == L.group_size(g));
        for (int64_t i = 0; i < L.group_size(g); ++i)
          CHECK(group_member(L, g, s, i) == members[static_cast<size_t>(i)]);
      }
      for (int64_t d : L.group_members(GroupKind::Ep, s)) {
        const int64_t hop =
            L.group_members(GroupKind::EpNode, s)[static_cast<size_t>(L.group_rank(GroupKind::EpNode, d))];
        const int64_t dest =
            L.group_members(GroupKind::EpRail, hop)[static_cast<size_t>(L.group_rank(GroupKind::EpRail, d))];
        CHECK(dest == d);
        // the rail hop leaves the domain exactly when d is in another domain
        const auto domain = L.group_members(GroupKind::EpNode, s);
        CHECK((std::find(domain.begin(), domain.end(), d) == domain.end()) == (hop != d));
        // combine: d → the member of d's rail in s's domain → s
        const int64_t back =
            L.group_members(GroupKind::EpRail, d)[static_cast<size_t>(L.group_rank(GroupKind::EpRail, s))];
        CHECK(L.group_members(GroupKind::EpNode, back)[static_cast<size_t>(L.group_rank(GroupKind::EpNode, s))] == s);
        ++pairs;
      }
    }
    CHECK(pairs == L.world() * L.ep);
  }
}

TEST_CASE("tiny-moe-hier lowers: each all-to-all as a domain phase, a regroup and a rail phase", "[schedules][moe]") {
  const JobSpec job = config::load_job_preset("tiny-moe-hier");
  const Schedule s = lower(job);
  CHECK(s.layout.ep_node == 2);
  check_valid(s);
  const int64_t T = job.parallel.micro_batch * job.model.seq_len, k = job.model.top_k, h = job.model.hidden;
  const Program& prog = s.programs[1];
  int ep_ops = 0;
  for (const Op& op : prog.ops) ep_ops += op.group == GroupKind::Ep;
  CHECK(ep_ops == 0); // every all-to-all is hierarchical
  // dispatch: domain first; combine: rail first; backward: the combine's gradient travels
  // as a dispatch, the dispatch's as a combine
  const std::pair<const char*, std::array<GroupKind, 2>> expected[] = {
      {"moe.dispatch.a2a", {GroupKind::EpNode, GroupKind::EpRail}},
      {"moe.combine.a2a", {GroupKind::EpRail, GroupKind::EpNode}},
      {"moe.combine.bwd.a2a", {GroupKind::EpNode, GroupKind::EpRail}},
      {"moe.dispatch.bwd.a2a", {GroupKind::EpRail, GroupKind::EpNode}}};
  for (const auto& [name, groups] : expected) {
    const Phase phase = std::string(name).find("bwd") != std::string::npos ? Phase::Backward : Phase::Forward;
    const auto first =
        ops_named(s, prog, std::string(name) + (groups[0] == GroupKind::EpNode ? ".node" : ".rail"), phase);
    const auto second =
        ops_named(s, prog, std::string(name) + (groups[1] == GroupKind::EpNode ? ".node" : ".rail"), phase);
    const auto regroup = ops_named(s, prog, std::string(name) + ".regroup", phase);
    INFO(name);
    REQUIRE(first.size() == 2 * static_cast<size_t>(job.parallel.micro_batches())); // 2 MoE layers on stage 1
    REQUIRE(second.size() == first.size());
    REQUIRE(regroup.size() == first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      CHECK(first[i]->group == groups[0]);
      CHECK(second[i]->group == groups[1]);
      CHECK(first[i]->kind == OpKind::AllToAll);
      const double load = detail::hottest_rank_load(job.model, 4, first[i]->labels.iteration,
                                                    first[i]->labels.micro_batch, first[i]->labels.layer);
      CHECK(first[i]->bytes == Approx(static_cast<double>(T * k * h) * 2 * load)); // each phase moves them all
      CHECK(second[i]->bytes == first[i]->bytes);
      CHECK(regroup[i]->bytes == 2 * first[i]->bytes); // read and written once
      // the second phase follows the regroup, which follows the first
      CHECK(first[i] < regroup[i]);
      CHECK(regroup[i] < second[i]);
    }
  }
}

TEST_CASE("hierarchical all-to-all with EP inside one domain changes nothing", "[schedules][moe]") {
  JobSpec flat = config::load_job_preset("tiny-moe-hier");
  flat.parallel.ep_a2a = EpAllToAll::Flat;
  flat.parallel.ep_node = 0;
  JobSpec one = flat;
  one.parallel.ep_a2a = EpAllToAll::Hierarchical;
  one.parallel.ep_node = 4; // the whole EP group in one NVLink domain
  const Schedule a = lower(flat), b = lower(one);
  CHECK_FALSE(b.layout.hierarchical_ep());
  REQUIRE(a.programs.size() == b.programs.size());
  for (size_t p = 0; p < a.programs.size(); ++p) {
    REQUIRE(a.programs[p].ops.size() == b.programs[p].ops.size());
    for (size_t i = 0; i < a.programs[p].ops.size(); ++i) {
      const Op &x = a.programs[p].ops[i], &y = b.programs[p].ops[i];
      CHECK((x.kind == y.kind && x.group == y.group && x.bytes == y.bytes && a.names[x.name] == b.names[y.name]));
    }
  }
}

TEST_CASE("bad hierarchical all-to-all settings are refused naming the key", "[schedules][moe]") {
  JobSpec job = config::load_job_preset("tiny-moe-hier");
  job.parallel.ep_node = 3;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("parallel.ep_node = 3 must divide parallel.ep = 4"));
  job.parallel.ep_a2a = EpAllToAll::Flat;
  CHECK_THROWS_WITH(lower(job), Catch::Contains("parallel.ep_node = 3 is set but parallel.ep_a2a is \"flat\""));
  const std::string text(config::preset_text("jobs", "tiny-moe-hier"));
  const auto at = text.find("ep_node = 2\n");
  REQUIRE(at != std::string::npos);
  CHECK_THROWS_WITH(config::parse_job(text.substr(0, at) + text.substr(at + 12), "hier.toml"),
                    Catch::Contains("ep_node") && Catch::Contains("is missing"));
  std::string bad = text;
  bad.replace(bad.find("\"hierarchical\""), 14, "\"2d\"");
  CHECK_THROWS_WITH(config::parse_job(bad, "hier.toml"),
                    Catch::Contains("ep_a2a") && Catch::Contains("valid values: flat, hierarchical"));
}

TEST_CASE("NVLink domains a token reaches: balanced closed form, capped by node-limited routing", "[schedules][moe]") {
  ModelSpec m = config::load_job_preset("tiny-moe-hier").model;
  m.routing = RoutingKind::Balanced;
  // 8 experts on ep 4 in 2 domains (share 1/2 each), top-2: 2·(1 − (1/2)²) = 1.5
  CHECK(detail::mean_token_domains(m, 4, 2, 0, 0, 0, 1) == Approx(1.5));
  CHECK(detail::mean_token_domains(m, 4, 2, 1, 0, 0, 1) == 1);
  // DeepSeek-V3's shape: 256 experts, top-8 on 8 domains: 8·(1 − (7/8)^8) ≈ 5.25; M = 4 caps it
  m.experts = 256;
  m.top_k = 8;
  CHECK(detail::mean_token_domains(m, 64, 8, 0, 0, 0, 1) == Approx(8 * (1 - std::pow(7.0 / 8, 8))));
  CHECK(detail::mean_token_domains(m, 64, 8, 4, 0, 0, 1) == 4);
  m.routing = RoutingKind::Dirichlet; // skewed draws concentrate tokens on fewer domains
  m.routing_alpha = 0.05;
  CHECK(detail::mean_token_domains(m, 64, 8, 0, 0, 0, 1) < 8 * (1 - std::pow(7.0 / 8, 8)));
}

TEST_CASE("tiny-moe-node-limited lowers: rail once per (token, domain), NVLink fan-out", "[schedules][moe]") {
  const JobSpec job = config::load_job_preset("tiny-moe-node-limited");
  const Schedule s = lower(job);
  check_valid(s);
  const int64_t T = job.parallel.micro_batch * job.model.seq_len, k = job.model.top_k, h = job.model.hidden;
  const Program& prog = s.programs[1];
  CHECK(ops_named(s, prog, "moe.dispatch.a2a.regroup", Phase::Forward).empty()); // forwarded, not copied
  // dispatch: the rail first (one row per token and domain: max_nodes_per_token = 1), then
  // the fan-out; the combine reverses it
  const auto rail = ops_named(s, prog, "moe.dispatch.a2a.rail", Phase::Forward);
  const auto node = ops_named(s, prog, "moe.dispatch.a2a.node", Phase::Forward);
  const auto combine_rail = ops_named(s, prog, "moe.combine.a2a.rail", Phase::Forward);
  const auto combine_node = ops_named(s, prog, "moe.combine.a2a.node", Phase::Forward);
  REQUIRE(!rail.empty());
  REQUIRE(rail.size() == node.size());
  REQUIRE(rail.size() == combine_rail.size());
  for (size_t i = 0; i < rail.size(); ++i) {
    const double load = detail::hottest_rank_load(job.model, 4, rail[i]->labels.iteration, rail[i]->labels.micro_batch,
                                                  rail[i]->labels.layer);
    const double all = static_cast<double>(T * k * h) * 2 * load;
    CHECK(rail[i] < node[i]);
    CHECK(node[i]->bytes == Approx(all));
    CHECK(rail[i]->bytes == Approx(all / static_cast<double>(k))); // one domain per token
    CHECK(combine_node[i] < combine_rail[i]);
    CHECK(combine_rail[i]->bytes == rail[i]->bytes);
  }
  JobSpec bad = job;
  bad.parallel.max_nodes_per_token = 3;
  CHECK_THROWS_WITH(lower(bad), Catch::Contains("parallel.max_nodes_per_token = 3; valid: 0 (no node limit) to "
                                                "ep / ep_node = 2"));
}
