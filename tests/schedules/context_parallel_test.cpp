// Context parallelism (ring attention) and the ZB-H1 pipeline: layout and
// groups, the ring's sends and receives, FLOPs and memory against the same job without
// them, the validator, the job file keys and the errors for what is not modelled.
#include <catch2/catch.hpp>

#include <map>
#include <sstream>

#include "config/error.hpp"
#include "config/job_file.hpp"
#include "schedules/check_job.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/pipeline.hpp"
#include "schedules/schedule.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"
#include "tests/schedules/check_valid.hpp"

using namespace twinscale;
using namespace twinscale::schedules;
using twinscale::schedules::test::check_valid;

namespace {
std::map<std::string, int> count_by_name(const Schedule& s, const Program& p) {
  std::map<std::string, int> out;
  for (const Op& op : p.ops) ++out[s.names[op.name]];
  return out;
}

double attention_flops(const Program& p) {
  double f = 0;
  for (const Op& op : p.ops)
    if (op.kind == OpKind::Attention && op.labels.phase != Phase::Recompute) f += op.flops;
  return f;
}

} // namespace

TEST_CASE("cp layout: Megatron's tp-cp-dp-pp order, cp blocks inside the dp·cp gradient group", "[schedules][cp]") {
  const Layout L{2, 4, 2, 1, 2}; // tp 2, dp 2 × cp 2, pp 2
  CHECK(L.world() == 16);
  // rank = tp + TP·(cp + CP·dp + DP·CP·pp)
  CHECK(L.group_members(GroupKind::Cp, 0) == std::vector<int64_t>{0, 2});
  CHECK(L.group_members(GroupKind::Cp, 5) == std::vector<int64_t>{5, 7});
  CHECK(L.group_rank(GroupKind::Cp, 7) == 1);
  CHECK(L.group_members(GroupKind::Dp, 1) == std::vector<int64_t>{1, 3, 5, 7}); // dp·cp
  CHECK(L.group_members(GroupKind::Tp, 2) == std::vector<int64_t>{2, 3});
  CHECK(L.group_members(GroupKind::Pp, 2) == std::vector<int64_t>{2, 10});
  CHECK(L.group_size(GroupKind::Cp) == 2);
}

TEST_CASE("tiny-cp: ring attention lowers, validates and keeps the model FLOPs", "[schedules][cp]") {
  const JobSpec job = config::load_job_preset("tiny-cp");
  REQUIRE(job.parallel.cp == 2);
  const Schedule s = lower(job);
  CHECK(s.layout.dp == 2); // dp 1 × cp 2
  CHECK(s.layout.cp == 2);
  CHECK(s.programs.size() == 4); // one per (pipeline stage, cp rank): the ring peers differ
  check_valid(s);

  const int M = static_cast<int>(job.parallel.micro_batches());
  const int layers_per_stage = 2;
  for (size_t p = 0; p < s.programs.size(); ++p) {
    auto n = count_by_name(s, s.programs[p]);
    const int passes = M * layers_per_stage;
    CHECK(n["attn.core.cp"] == 2 * passes);     // cp steps per forward
    CHECK(n["attn.core.cp.bwd"] == 2 * passes); // and per backward
    CHECK(n["attn.cp.send.kv"] == 2 * passes);  // cp − 1 in forward, cp − 1 in backward
    CHECK(n["attn.cp.recv.kv"] == 2 * passes);
    CHECK(n["attn.cp.send.dkv"] == 2 * passes);   // cp per backward: back to the owner
    CHECK(n["attn.cp.dkv.correction"] == passes); // cp − 1 per backward: a partial received
    for (const Op& op : s.programs[p].ops)
      if (op.group == GroupKind::Cp) {
        CHECK((op.kind == OpKind::Send || op.kind == OpKind::Recv));
        CHECK((op.stream == Stream::CpSend || op.stream == Stream::CpRecv));
        CHECK(op.peer == static_cast<int32_t>(1 - p % 2)); // the other rank of the ring of 2
        // K and V of 128 local tokens, 1 of 2 kv heads per TP rank, head_dim 32, bf16
        CHECK(op.bytes == Approx(2.0 * 128 * 1 * 32 * 2));
      }
    for (const Op& op : s.programs[p].ops)
      if (s.names[op.name] == "dp.grad.rs") CHECK(op.group == GroupKind::Dp); // over dp·cp
    // what each ring step executes: step 0 causal over the rank's own chunks (no window),
    // step 1 an unmasked block of as many scores: every local query against half the
    // local keys (shape[3] = s/(2·cp) of the 128 local tokens); model FLOPs alike
    std::vector<const Op*> forward_steps;
    for (const Op& op : s.programs[p].ops)
      if (s.names[op.name] == "attn.core.cp") forward_steps.push_back(&op); // the first layer's ring first
    REQUIRE(forward_steps.size() >= 2);
    CHECK(forward_steps[0]->shape[3] == 0);
    CHECK(forward_steps[1]->shape[1] == 128);
    CHECK(forward_steps[1]->shape[3] == 64);
    CHECK(forward_steps[1]->flops == forward_steps[0]->flops);
    // backward: a step's attention needs only the K/V block it holds; the gradient received
    // from the ring is waited for by the correction after it (Transformer Engine's order)
    const Program& prog = s.programs[p];
    for (uint32_t i = 0; i < prog.ops.size(); ++i) {
      const Op& op = prog.ops[i];
      if (s.names[op.name] != "attn.core.cp.bwd") continue;
      for (uint32_t k = 0; k < op.dep_count; ++k)
        CHECK(s.names[prog.ops[prog.deps[op.dep_begin + k]].name] != "attn.cp.recv.dkv");
    }
  }
  // the same job without cp on as many ranks (dp 2, each rank holds whole sequences):
  // same model FLOPs, the same attention work per rank, but half of it per micro-batch
  // (a rank holds half the queries of twice as many micro-batches)
  JobSpec whole = job;
  whole.parallel.cp = 1;
  whole.parallel.dp = 2;
  const Schedule w = lower(whole);
  CHECK(s.model_flops_per_iteration == Approx(w.model_flops_per_iteration));
  CHECK(attention_flops(s.programs[0]) == Approx(attention_flops(w.programs[0])));
  CHECK(attention_flops(s.programs[0]) / static_cast<double>(M) ==
        Approx(attention_flops(w.programs[0]) / static_cast<double>(whole.parallel.micro_batches()) / 2));
}

TEST_CASE("attention_backend: cuDNN's kernel replaces FlashAttention-2's op for op, ring steps included",
          "[schedules][cp]") {
  JobSpec job = config::load_job_preset("tiny-cp");
  REQUIRE(job.options.operators.flash_attention);
  const Schedule flash = lower(job);
  job.options.operators.attention_backend = AttentionBackend::Cudnn;
  const Schedule cudnn = lower(job);
  REQUIRE(flash.programs.size() == cudnn.programs.size());
  int replaced = 0;
  for (size_t p = 0; p < flash.programs.size(); ++p) {
    const auto& a = flash.programs[p].ops;
    const auto& b = cudnn.programs[p].ops;
    REQUIRE(a.size() == b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      CHECK(a[i].flops == b[i].flops);
      CHECK(a[i].shape == b[i].shape);
      if (a[i].kernel == Kernel::FlashAttention2) {
        CHECK(b[i].kernel == Kernel::CudnnAttention);
        ++replaced;
      } else {
        CHECK(b[i].kernel == a[i].kernel);
      }
    }
  }
  // every program: 2 layers × 2 micro-batches … of ring steps forward and backward
  CHECK(replaced ==
        static_cast<int>(flash.programs.size()) * 2 * 2 * 2 * 2 * static_cast<int>(job.parallel.micro_batches()) / 2);
  CHECK(cudnn.model_flops_per_iteration == flash.model_flops_per_iteration);
  // the schedule file keeps the job's backend and every op's kernel
  std::ostringstream os;
  write_schedule_json(cudnn, os);
  CHECK(os.str().find("\"attention_backend\":\"cudnn\"") != std::string::npos);
  CHECK(os.str().find("cudnn_attention") != std::string::npos);
  std::istringstream is(os.str());
  const Schedule back = read_schedule_json(is, "tiny-cp-cudnn.json");
  CHECK(back.job.options.operators.attention_backend == AttentionBackend::Cudnn);
  CHECK(back.programs[0].ops.size() == cudnn.programs[0].ops.size());
  for (size_t i = 0; i < back.programs[0].ops.size(); ++i)
    CHECK(back.programs[0].ops[i].kernel == cudnn.programs[0].ops[i].kernel);
  // without flash_attention the backend names no kernel: the unfused core stays
  job.options.operators.flash_attention = false;
  const Schedule unfused = lower(job);
  for (const Op& op : unfused.programs[0].ops) CHECK(op.kernel != Kernel::CudnnAttention);
}

TEST_CASE("tiny-cp: activations per rank divided by cp, JSON round trip keeps the layout", "[schedules][cp]") {
  const JobSpec job = config::load_job_preset("tiny-cp");
  JobSpec whole = job;
  whole.parallel.cp = 1;
  whole.parallel.dp = 2;
  for (int64_t p = 0; p < 2; ++p) {
    const MemoryEstimate a = estimate_memory(job, p), b = estimate_memory(whole, p);
    CHECK(a.activations_bytes == Approx(b.activations_bytes / 2));
    CHECK(a.optimizer_bytes == Approx(b.optimizer_bytes)); // sharded over dp·cp = 2 as over dp = 2
  }
  const Schedule s = lower(job);
  std::ostringstream os;
  write_schedule_json(s, os);
  CHECK(os.str().find("\"cp\":2") != std::string::npos);
  std::istringstream is(os.str());
  const Schedule back = read_schedule_json(is, "tiny-cp.json");
  CHECK(back.job.parallel.cp == 2);
  CHECK(back.layout.cp == 2);
  CHECK(back.layout.dp == 2);
  CHECK(back.programs.size() == s.programs.size());
  const auto v = validate(back);
  for (const auto& x : v) UNSCOPED_INFO(describe(x));
  CHECK(v.empty());
}

TEST_CASE("cp and zb-h1: what is not modelled is refused naming the key", "[schedules][cp]") {
  JobSpec job = config::load_job_preset("tiny-cp");
  job.model.seq_len = 130; // not divisible by 2·cp = 4
  CHECK_THROWS_WITH(check_job(job), Catch::Contains("2·parallel.cp = 4"));
  job = config::load_job_preset("tiny-cp");
  job.model.attention = AttentionKind::Sliding;
  job.model.window = 64;
  CHECK_THROWS_WITH(check_job(job), Catch::Contains("model.attention = \"dense\""));
  job = config::load_job_preset("tiny-moe");
  job.parallel.cp = 2;
  job.parallel.dp = 1;
  job.parallel.ep = 1;
  job.parallel.global_batch = 4;
  CHECK_THROWS_WITH(check_job(job), Catch::Contains("model.experts > 0"));
  JobSpec zb = config::load_job_preset("tiny-interleaved");
  zb.options.pipeline = PipelineKind::ZeroBubbleH1;
  CHECK_THROWS_WITH(check_job(zb), Catch::Contains("parallel.vpp = 2 > 1 needs"));
  zb = config::load_job_preset("tiny-fsdp");
  zb.options.pipeline = PipelineKind::ZeroBubbleH1;
  CHECK_THROWS_WITH(check_job(zb), Catch::Contains("zero_stage = 3"));
  // the job file: cp is a [parallel] key with its range, zb-h1 a pipeline name
  const std::string base = "name = \"x\"\ncluster = \"tiny-2tier\"\n[model]\nlayers = 2\nhidden = 64\nheads = 4\n"
                           "seq_len = 64\nvocab = 128\n[parallel]\ndp = 1\nglobal_batch = 2\n";
  CHECK(config::parse_job(base + "cp = 4\n[schedule]\npipeline = \"zb-h1\"\n", "x.toml").parallel.cp == 4);
  CHECK(config::parse_job(base + "[schedule]\npipeline = \"zb-h1\"\n", "x.toml").options.pipeline ==
        PipelineKind::ZeroBubbleH1);
  CHECK_THROWS_WITH(config::parse_job(base + "cp = 0\n", "x.toml"), Catch::Contains("cp"));
  // dp from gpus counts cp: 8 GPUs at cp 2 are dp 4
  const std::string no_dp = "gpus = 8\nname = \"x\"\ncluster = \"tiny-2tier\"\n[model]\nlayers = 2\nhidden = 64\n"
                            "heads = 4\nseq_len = 64\nvocab = 128\n[parallel]\ncp = 2\nglobal_batch = 4\n";
  CHECK(config::parse_job(no_dp, "y.toml").parallel.dp == 4);
  CHECK_THROWS_WITH(config::parse_job("gpus = 5\n" + no_dp.substr(9), "y.toml"), Catch::Contains("tp·pp·cp"));
}

TEST_CASE("zb-h1 order: 1F1B's F and B order, each W after its B, W deferred by the warm-up", "[schedules][zb]") {
  const int64_t P = 4, M = 8;
  for (int64_t r = 0; r < P; ++r) {
    INFO("rank " << r);
    const auto zb = pipeline_order(PipelineKind::ZeroBubbleH1, P, 1, M, r);
    const auto ob = pipeline_order(PipelineKind::OneFOneB, P, 1, M, r);
    std::vector<PipelineStep> without_w;
    std::map<int64_t, size_t> b_at, w_at;
    for (size_t i = 0; i < zb.size(); ++i) {
      if (!zb[i].weight) without_w.push_back(zb[i]);
      if (!zb[i].forward && !zb[i].weight) b_at[zb[i].micro_batch] = i;
      if (zb[i].weight) w_at[zb[i].micro_batch] = i;
    }
    CHECK(without_w == ob); // same F and B order as Megatron's 1F1B
    REQUIRE(w_at.size() == static_cast<size_t>(M));
    for (int64_t m = 0; m < M; ++m) CHECK(w_at[m] > b_at[m]);
    // at most r W passes pending at any time (the first rank none, the last P − 1)
    int64_t pending = 0, most = 0;
    for (const auto& st : zb) {
      if (!st.forward) pending += st.weight ? -1 : 1;
      if (!st.forward && !st.weight) most = std::max(most, pending - 1); // before its W may run
    }
    CHECK(most <= r);
    if (r == P - 1) CHECK(most == r); // the last stage defers the most
  }
  // first stage after its warm-up: F B W F B W …; the last ends with P − 1 W passes
  const auto first = pipeline_order(PipelineKind::ZeroBubbleH1, P, 1, M, 0);
  CHECK((!first[P].forward && !first[P].weight));
  CHECK(first[P + 1].weight);
  const auto last = pipeline_order(PipelineKind::ZeroBubbleH1, P, 1, M, P - 1);
  for (int64_t i = 0; i < P - 1; ++i) CHECK(last[last.size() - 1 - static_cast<size_t>(i)].weight);
}

TEST_CASE("tiny-zb: the W passes carry exactly 1F1B's weight-gradient GEMMs, memory vs 1F1B", "[schedules][zb]") {
  const JobSpec job = config::load_job_preset("tiny-zb");
  const Schedule s = lower(job);
  check_valid(s);
  JobSpec ob = job;
  ob.options.pipeline = PipelineKind::OneFOneB;
  const Schedule o = lower(ob);
  CHECK(s.model_flops_per_iteration == Approx(o.model_flops_per_iteration));
  for (size_t p = 0; p < 2; ++p) {
    auto a = count_by_name(s, s.programs[p]), b = count_by_name(o, o.programs[p]);
    CHECK(a == b); // the same ops, in another order
    // every wgrad GEMM comes after its micro-batch's last input-gradient GEMM of that layer
    std::map<std::pair<int, int>, size_t> last_dgrad;
    for (size_t i = 0; i < s.programs[p].ops.size(); ++i) {
      const Op& op = s.programs[p].ops[i];
      const std::string& name = s.names[op.name];
      if (name.find(".dgrad") != std::string::npos) last_dgrad[{op.labels.micro_batch, op.labels.layer}] = i;
      if (name.find(".wgrad") != std::string::npos && name.find(".ag") == std::string::npos && op.labels.layer >= 0)
        CHECK(i > last_dgrad[{op.labels.micro_batch, op.labels.layer}]);
    }
  }
  // the deferred W passes keep their GEMM inputs: equal to 1F1B on the first stage (no
  // deferral there), more on the last, which stays below the first stage's peak
  const double first0 = estimate_memory(ob, 0).activations_bytes;
  CHECK(estimate_memory(job, 0).activations_bytes == Approx(first0));
  CHECK(estimate_memory(job, 1).activations_bytes > estimate_memory(ob, 1).activations_bytes);
  CHECK(estimate_memory(job, 1).activations_bytes < first0);
}

TEST_CASE("llama3-405b-128k: Table 4's long-context layout, per-rank memory of the 8K stage", "[schedules][cp]") {
  const JobSpec job = config::load_job_preset("llama3-405b-128k");
  CHECK(job.parallel.gpus() == 16384);
  CHECK(job.parallel.dp == 8);
  CHECK(job.parallel.cp == 16);
  CHECK(job.parallel.micro_batches() == 16);
  CHECK(job.model.seq_len * job.parallel.global_batch == 16 * 1024 * 1024); // 16M tokens per batch
  // each rank holds 131,072 / 16 = 8,192 tokens of a sequence: the 8K stage's activations
  JobSpec short_context = config::load_job_preset("llama3-405b");
  short_context.model.rotary = true;
  for (int64_t p : {int64_t{0}, int64_t{15}}) {
    const MemoryEstimate a = estimate_memory(job, p), b = estimate_memory(short_context, p);
    CHECK(a.activations_bytes == Approx(b.activations_bytes));
    CHECK(a.parameters_bytes == Approx(b.parameters_bytes));
    CHECK(a.total_bytes() < 81559.0 * 1024 * 1024); // H100 80GB HBM3: 81,559 MiB (nvidia-smi)
  }
}
