// MoE parallel folding (Megatron-Core's expert_tensor_parallel_size): the MoE layers
// re-split each pipeline stage's tp·cp·dp ranks as etp × ep × expert-dp. The expected
// groups come from an independent statement of Megatron-Core's expert rank generator:
// orthogonal groups over the dimensions (etp, ep, edp, pp), first dimension fastest.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <vector>

#include "config/job_file.hpp"
#include "config/presets.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/schedule.hpp"
#include "tests/schedules/check_valid.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

namespace {

/// The groups along dimension `which` of a rank space with `sizes` (first fastest): for
/// each combination of the other coordinates, the ranks that vary only in `which`.
std::map<int64_t, std::vector<int64_t>> orthogonal_groups(const std::vector<int64_t>& sizes, size_t which) {
  int64_t world = 1;
  for (int64_t s : sizes) world *= s;
  std::map<int64_t, std::vector<int64_t>> of_rank;
  for (int64_t r = 0; r < world; ++r) {
    std::vector<int64_t> c; // r's coordinates
    int64_t rest = r;
    for (int64_t s : sizes) c.push_back(rest % s), rest /= s;
    std::vector<int64_t> group;
    for (int64_t i = 0; i < sizes[which]; ++i) {
      c[which] = i;
      int64_t rank = 0, stride = 1;
      for (size_t d = 0; d < sizes.size(); ++d) rank += c[d] * stride, stride *= sizes[d];
      group.push_back(rank);
    }
    of_rank[r] = group;
  }
  return of_rank;
}

void check_folded_groups(const Layout& L) {
  const int64_t edp = L.tp * L.dp / (L.etp * L.ep);
  const std::vector<int64_t> dims{L.etp, L.ep, edp, L.pp}; // Megatron-Core's "tp-ep-dp-pp"
  const auto ep = orthogonal_groups(dims, 1);
  const auto expert_dp = orthogonal_groups(dims, 2);
  CHECK(L.group_size(GroupKind::Ep) == L.ep);
  CHECK(L.group_size(GroupKind::ExpertDp) == edp);
  for (int64_t r = 0; r < L.world(); ++r) {
    INFO("rank " << r);
    CHECK(L.group_members(GroupKind::Ep, r) == ep.at(r));
    CHECK(L.group_members(GroupKind::ExpertDp, r) == expert_dp.at(r));
    const auto& e = ep.at(r);
    CHECK(L.group_rank(GroupKind::Ep, r) == std::find(e.begin(), e.end(), r) - e.begin());
    const auto& d = expert_dp.at(r);
    CHECK(L.group_rank(GroupKind::ExpertDp, r) == std::find(d.begin(), d.end(), r) - d.begin());
  }
}

} // namespace

TEST_CASE("folded expert groups match Megatron-Core's expert rank generator", "[schedules][moe][folding]") {
  // tp 2, dp 4, pp 2, ep 4, etp 1: EP groups of 4 consecutive ranks across both TP ranks
  const Layout L{2, 4, 2, 4, 1, 4, 1};
  check_folded_groups(L);
  CHECK(L.group_members(GroupKind::Ep, 5) == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(L.group_members(GroupKind::ExpertDp, 5) == std::vector<int64_t>{1, 5});
  CHECK(L.group_members(GroupKind::Ep, 13) == std::vector<int64_t>{12, 13, 14, 15}); // second stage
  // ep larger than dp (the case the unfolded layout cannot express): tp 2, dp 2, ep 4
  check_folded_groups(Layout{2, 2, 2, 4, 1, 4, 1});
  // an expert-TP dimension of 2 ranks strides the EP group by 2
  const Layout T{4, 2, 1, 2, 1, 2, 2};
  check_folded_groups(T);
  CHECK(T.group_members(GroupKind::Ep, 1) == std::vector<int64_t>{1, 3});
  CHECK(T.group_members(GroupKind::ExpertDp, 1) == std::vector<int64_t>{1, 5});
}

TEST_CASE("folded hierarchical all-to-all: NVLink domains of consecutive EP ranks, rails across them",
          "[schedules][moe][folding]") {
  const Layout L{2, 4, 1, 8, 1, 4, 1}; // tp 2, dp 4: one EP group of 8, domains of 4
  CHECK(L.group_members(GroupKind::EpNode, 5) == std::vector<int64_t>{4, 5, 6, 7});
  CHECK(L.group_members(GroupKind::EpRail, 5) == std::vector<int64_t>{1, 5});
  CHECK(L.group_rank(GroupKind::EpNode, 5) == 1);
  CHECK(L.group_rank(GroupKind::EpRail, 5) == 1);
}

TEST_CASE("a folded MoE job lowers to a valid schedule", "[schedules][moe][folding]") {
  LoweringTarget target;
  target.check_memory = false;
  JobSpec job = config::load_job_preset("tiny-moe-folded");
  REQUIRE(job.parallel.etp == 1);
  const Schedule s = lower(job, target);
  CHECK(s.layout.folded_experts());
  CHECK(s.layout.group_members(GroupKind::Ep, 0) == std::vector<int64_t>{0, 1, 2, 3});
  check_valid(s);
  // pp 1, dp 4: ep 4 divides dp, but folded the groups differ from the unfolded ones and
  // expert gradients are reduced over two expert-DP ranks
  job.parallel.pp = 1;
  job.parallel.dp = 4;
  const Schedule f = lower(job, target);
  CHECK(f.layout.group_members(GroupKind::Ep, 0) == std::vector<int64_t>{0, 1, 2, 3});
  CHECK(f.layout.group_members(GroupKind::ExpertDp, 0) == std::vector<int64_t>{0, 4});
  check_valid(f);
  CHECK(job.parallel.expert_dp() == 2); // tp·dp/(etp·ep)
  job.parallel.etp = 0;
  const Schedule u = lower(job, target);
  CHECK(u.layout.group_members(GroupKind::Ep, 0) == std::vector<int64_t>{0, 2, 4, 6});
  check_valid(u);
  CHECK(job.parallel.expert_dp() == 2); // tp·(dp/ep): the same holders, other ranks
}

TEST_CASE("bad foldings are refused naming the keys", "[schedules][moe][folding]") {
  const JobSpec base = config::load_job_preset("tiny-moe-folded");
  auto refused = [&](auto edit, const char* words) {
    JobSpec job = base;
    edit(job);
    CHECK_THROWS_WITH(lower(job), Catch::Contains(words));
  };
  refused([](JobSpec& j) { j.parallel.ep = 8; },
          "parallel.ep · parallel.etp = 8 · 1 must divide parallel.tp · parallel.cp · parallel.dp = 2 · 1 · 2 = 4");
  refused([](JobSpec& j) { j.parallel.etp = 2; }, "parallel.etp = 2");
  refused([](JobSpec& j) { j.parallel.zero_stage = 3; }, "parallel.etp with parallel.zero_stage = 3");
  refused([](JobSpec& j) { j.parallel.etp = 0; }, "set parallel.etp = 1");
}

TEST_CASE("qwen3-235b-a22b: TP 2 PP 8 EP 32 folds expert parallelism over a stage's 32 ranks",
          "[schedules][moe][folding]") {
  const JobSpec job = config::load_job_preset("qwen3-235b-a22b");
  CHECK(job.parallel.dp == 16);
  CHECK(job.parallel.ep == 32);
  CHECK(job.parallel.expert_dp() == 1);
  for (int64_t p = 0; p < job.parallel.pp; ++p) {
    const MemoryEstimate mem = estimate_memory(job, p);
    INFO("stage " << p << ": " << mem.total_bytes() / 1e9 << " GB");
    CHECK(mem.total_bytes() < 80e9); // fits an H100
  }
}

TEST_CASE("parallel.etp in a job file: absent is unfolded, 1 folds, below 1 is refused naming the key",
          "[schedules][moe][folding]") {
  const std::string folded(config::preset_text("jobs", "tiny-moe-folded"));
  CHECK(config::parse_job(folded, "folded.toml").parallel.etp == 1);
  const auto at = folded.find("etp = 1");
  REQUIRE(at != std::string::npos);
  std::string zero = folded;
  zero.replace(at, 7, "etp = 0");
  CHECK_THROWS_WITH(config::parse_job(zero, "zero.toml"), Catch::Contains("parallel.etp"));
  std::string absent = folded;
  absent.replace(at, 7, "");
  CHECK_THROWS_WITH(config::parse_job(absent, "absent.toml"),
                    Catch::Contains("parallel.ep = 4 must divide parallel.dp = 2") &&
                        Catch::Contains("set parallel.etp = 1"));
  CHECK(config::load_job_preset("tiny-moe").parallel.etp == 0);
}
