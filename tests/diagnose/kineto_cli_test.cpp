// PyTorch profiler (Kineto) traces through diagnose, compare and calibrate: a generator
// writes Kineto Chrome traces as torch.profiler's export_chrome_trace does (one file per
// rank; GPU kernels on CUDA streams, NCCL kernels with PyTorch's collective metadata,
// host events and annotations around them), from hand-built kernel lists and from a
// simulated run of a tiny preset; the hand-made files in tests/data/kineto are read too.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include "schedules/trace.hpp"
#include "tests/cli_runner.hpp"

using namespace twinscale;
namespace fs = std::filesystem;
namespace s = twinscale::schedules;
using nlohmann::json;

namespace {

/// One GPU kernel of the generator: name, stream, start and duration (µs), and for an
/// NCCL kernel its collective metadata (absent: an object without it).
struct Kernel {
  std::string name;
  int64_t stream = 7;
  double ts_us = 0, dur_us = 0;
  json collective = json::object();
  std::string cat = "kernel";
};

/// A Kineto trace of one rank, laid out as PyTorch writes it: schemaVersion,
/// deviceProperties, distributedInfo, then traceEvents with host (cpu_op, cuda_runtime)
/// events, a flow, GPU kernels (pid = device, tid = stream), ProfilerStep annotations, the
/// "Spans" process (a string pid) and the final instant event.
json kineto_rank(int64_t rank, int64_t world, const std::vector<Kernel>& kernels,
                 const std::vector<std::pair<double, double>>& steps) {
  json doc;
  doc["schemaVersion"] = 1;
  doc["deviceProperties"] =
      json::array({{{"id", 0}, {"name", "NVIDIA H100 80GB HBM3"}, {"totalGlobalMem", 85029158912}}});
  doc["distributedInfo"] = {{"backend", "nccl"}, {"rank", rank}, {"world_size", world}, {"pg_count", 1}};
  json ev = json::array();
  const int64_t device = rank % 8;
  ev.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", device}, {"tid", 0}, {"args", {{"name", "GPU 0"}}}});
  int64_t correlation = 100;
  for (size_t k = 0; k < steps.size(); ++k)
    ev.push_back({{"ph", "X"},
                  {"cat", "gpu_user_annotation"},
                  {"name", "ProfilerStep#" + std::to_string(k + 5)},
                  {"pid", device},
                  {"tid", 7},
                  {"ts", steps[k].first},
                  {"dur", steps[k].second},
                  {"args", {{"External id", 1 + k}}}});
  for (const Kernel& kn : kernels) {
    ++correlation;
    ev.push_back({{"ph", "X"},
                  {"cat", "cpu_op"},
                  {"name", kn.name.rfind("nccl", 0) == 0 ? "record_param_comms" : "aten::mm"},
                  {"pid", 4242},
                  {"tid", 4242},
                  {"ts", kn.ts_us > 20 ? kn.ts_us - 20 : 0.0},
                  {"dur", 5.0},
                  {"args", {{"External id", correlation}, {"Record function id", 0}}}});
    ev.push_back({{"ph", "X"},
                  {"cat", "cuda_runtime"},
                  {"name", "cudaLaunchKernel"},
                  {"pid", 4242},
                  {"tid", 4242},
                  {"ts", kn.ts_us > 10 ? kn.ts_us - 10 : 0.0},
                  {"dur", 3.0},
                  {"args", {{"External id", correlation}, {"cbid", 211}, {"correlation", correlation}}}});
    json args = {{"External id", correlation},
                 {"queued", 0},
                 {"device", device},
                 {"context", 1},
                 {"stream", kn.stream},
                 {"correlation", correlation},
                 {"grid", {132, 1, 1}},
                 {"block", {384, 1, 1}},
                 {"est. achieved occupancy %", 12}};
    for (const auto& [key, v] : kn.collective.items()) args[key] = v;
    ev.push_back({{"ph", "X"},
                  {"cat", kn.cat},
                  {"name", kn.name},
                  {"pid", device},
                  {"tid", kn.stream},
                  {"ts", kn.ts_us},
                  {"dur", kn.dur_us},
                  {"args", args}});
    ev.push_back({{"ph", "f"},
                  {"id", correlation},
                  {"pid", device},
                  {"tid", kn.stream},
                  {"ts", kn.ts_us},
                  {"cat", "ac2g"},
                  {"name", "ac2g"},
                  {"bp", "e"}});
  }
  ev.push_back({{"ph", "X"},
                {"cat", "Trace"},
                {"name", "PyTorch Profiler (0)"},
                {"pid", "Spans"},
                {"tid", "PyTorch Profiler"},
                {"ts", 0.0},
                {"dur", 1.0},
                {"args", {{"Op count", 0}}}});
  ev.push_back({{"ph", "i"}, {"s", "g"}, {"name", "Record Window End"}, {"pid", ""}, {"tid", ""}, {"ts", 1e9}});
  doc["traceEvents"] = ev;
  doc["traceName"] = "rank" + std::to_string(rank) + ".pt.trace.json";
  return doc;
}

json allreduce_meta(int64_t nelems, int64_t world) {
  return {{"Collective name", "allreduce"},
          {"In msg nelems", nelems},
          {"Out msg nelems", nelems},
          {"Group size", world},
          {"dtype", "BFloat16"},
          {"Process Group Name", "0"},
          {"Process Group Description", "default_pg"}};
}

/// `world` data-parallel ranks, 3 profiled steps of GEMMs, flash attention, an
/// elementwise kernel and a gradient all-reduce; `slow` runs its compute kernels `factor` ×
/// longer, and every rank's all-reduce starts when the last rank arrives.
void write_dp_run(const fs::path& dir, int64_t world, int64_t slow, double factor) {
  fs::create_directories(dir);
  const std::vector<std::pair<std::string, double>> compute = {
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_"
       "kernel__5x_cublas",
       400},
      {"void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>()", 300},
      {"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>()", 50},
      {"nvjet_tst_192x192_64x4_1x2_h_bz_coopB_TNT", 350}};
  auto dur = [&](int64_t r, double d) { return d * (r == slow ? factor : 1.0) + 0.3 * static_cast<double>(r % 3); };
  double arrive = 0; // the compute time of the slowest rank in a step
  for (int64_t r = 0; r < world; ++r) {
    double t = 0;
    for (const auto& [name, d] : compute) t += dur(r, d) + 2;
    arrive = std::max(arrive, t);
  }
  for (int64_t r = 0; r < world; ++r) {
    std::vector<Kernel> ks;
    std::vector<std::pair<double, double>> steps;
    for (int step = 0; step < 3; ++step) {
      const double begin = 1000 + step * (arrive + 130);
      double t = begin;
      for (const auto& [name, d] : compute) {
        ks.push_back({name, 7, t, dur(r, d)});
        t += dur(r, d) + 2;
      }
      ks.push_back({"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 13, begin + arrive,
                    120, allreduce_meta(1 << 20, world)});
      steps.emplace_back(begin, arrive + 130);
    }
    test::write_text(dir / ("rank" + std::to_string(r) + ".pt.trace.json"), kineto_rank(r, world, ks, steps).dump(1));
  }
}

/// The kernel name a twinscale op of `kind` launches on a GPU under PyTorch.
std::string kernel_name(s::OpKind kind) {
  switch (kind) {
  case s::OpKind::Gemm:
    return "sm80_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize96x64x32_stage4_warpsize2x2x1_tensor16x8x16_kernel";
  case s::OpKind::Attention: return "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 64, 4>>()";
  case s::OpKind::OptimizerStep: return "void multi_tensor_apply_kernel<FusedAdamMathFunctor<float, 4>>()";
  case s::OpKind::AllReduce: return "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  case s::OpKind::AllGather: return "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  case s::OpKind::ReduceScatter:
    return "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  case s::OpKind::Broadcast: return "ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  case s::OpKind::AllToAll:
  case s::OpKind::Send:
  case s::OpKind::Recv: return "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)";
  default: return "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>()";
  }
}

/// The Kineto traces a PyTorch run of a twinscale trace's ops would leave: one kernel per
/// op at the op's time (data-stream copies as memcpy), collectives with their metadata.
void write_kineto_of(const std::vector<s::TraceRecord>& records, int64_t world, const fs::path& dir) {
  fs::create_directories(dir);
  std::vector<std::vector<Kernel>> ranks(static_cast<size_t>(world));
  for (auto& k : ranks) // the batch copied to the GPU first (Kineto lists copies apart from kernels)
    k.push_back({"Memcpy HtoD (Pinned -> Device)", 31, 0.0, 1.0, json::object(), "gpu_memcpy"});
  for (const s::TraceRecord& r : records) {
    Kernel k{kernel_name(r.kind), 7 + static_cast<int64_t>(r.stream) * 6, r.start_s * 1e6, r.duration_s * 1e6};
    if (r.stream == s::Stream::Data)
      k = {"Memcpy HtoD (Pinned -> Device)", 31, r.start_s * 1e6, r.duration_s * 1e6, json::object(), "gpu_memcpy"};
    s::Op op;
    op.kind = r.kind;
    if (op.is_communication()) {
      const bool even = std::fmod(r.bytes, 2.0) == 0;
      const double n = even ? r.bytes / 2 : r.bytes;
      const char* name = r.kind == s::OpKind::Send       ? "send"
                         : r.kind == s::OpKind::Recv     ? "recv"
                         : r.kind == s::OpKind::AllToAll ? "all_to_all"
                                                         : "allreduce";
      k.collective = {{"Collective name", name},
                      {"In msg nelems", static_cast<int64_t>(n)},
                      {"Out msg nelems", static_cast<int64_t>(n)},
                      {"Group size", 2},
                      {"dtype", even ? "BFloat16" : "Byte"}};
      if (!r.instance.empty()) k.collective["Process Group Name"] = r.instance.substr(0, r.instance.find('#'));
    }
    ranks[static_cast<size_t>(r.rank)].push_back(k);
  }
  for (int64_t r = 0; r < world; ++r)
    test::write_text(dir / ("rank" + std::to_string(r) + ".json"),
                     kineto_rank(r, world, ranks[static_cast<size_t>(r)], {}).dump());
}

} // namespace

TEST_CASE("kineto: diagnose names the straggler of an 8-rank PyTorch profiler run, a healthy 4-rank run has none") {
  const fs::path dir = test::scratch_dir("kineto-straggler");
  write_dp_run(dir / "run8", 8, 5, 1.25);
  auto d = test::run_cli_split("diagnose " + (dir / "run8").string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE(d.code == 4);
  auto j = json::parse(d.out);
  CHECK(j["steps"] == 3);
  REQUIRE(!j["findings"].empty());
  CHECK(j["findings"][0]["kind"] == "straggler");
  CHECK(j["findings"][0]["ranks"] == json::array({5}));
  CHECK(j["findings"][0]["excess"].get<double>() == Approx(0.25).margin(0.02));
  // the files given one by one are the ranks of one run too
  std::string files;
  for (int r = 0; r < 8; ++r) files += " " + (dir / "run8" / ("rank" + std::to_string(r) + ".pt.trace.json")).string();
  d = test::run_cli_split("diagnose" + files + " --json", dir);
  REQUIRE(d.code == 4);
  CHECK(json::parse(d.out)["findings"][0]["ranks"] == json::array({5}));
  // the report of the same run: one page naming the straggler
  d = test::run_cli_split("report " + (dir / "run8").string() + " -o " + (dir / "r.html").string(), dir);
  INFO(d.err);
  CHECK(d.code == 0);
  CHECK(d.says("1 finding(s)"));
  CHECK(fs::file_size(dir / "r.html") > 0);
  // a healthy run: nothing found
  write_dp_run(dir / "ok", 4, -1, 1.0);
  d = test::run_cli_split("diagnose " + (dir / "ok").string(), dir);
  INFO(d.out << d.err);
  CHECK(d.code == 0);
  fs::remove_all(dir);
}

TEST_CASE("kineto: a PyTorch-style trace of a simulated run compares against the simulated trace and calibrates") {
  const fs::path dir = test::scratch_dir("kineto-compare");
  const std::string job = "--preset tiny-1f1b --gpus 8 --global-batch 8";
  auto sim = test::run_cli_split(
      "simulate " + job + " --mode analytic --every-rank --trace " + (dir / "sim.json").string(), dir);
  INFO(sim.err);
  REQUIRE(sim.code == 0);
  const auto records = s::read_chrome_trace_file((dir / "sim.json").string());
  int64_t data_ops = 0;
  for (const auto& r : records) data_ops += r.stream == s::Stream::Data;
  write_kineto_of(records, 8, dir / "kineto");

  auto c =
      test::run_cli_split("compare " + (dir / "kineto").string() + " " + (dir / "sim.json").string() + " --json", dir);
  INFO(c.out << c.err);
  REQUIRE(c.code == 0);
  auto j = json::parse(c.out);
  CHECK(j["a"]["source"] == "kineto");
  CHECK(j["matched"].get<int64_t>() == static_cast<int64_t>(records.size()) - data_ops);
  CHECK(j["only_a"] == 0);
  CHECK(j["only_b"].get<int64_t>() == data_ops);
  for (const auto& k : j["kinds"]) CHECK(k["max_abs_rel_error"].get<double>() < 1e-3); // ns rounding only
  CHECK(c.says("memory copies and sets skipped"));

  auto cal = test::run_cli_split(
      "calibrate " + (dir / "kineto").string() + " " + job + " --out " + (dir / "cal.json").string(), dir);
  INFO(cal.err);
  REQUIRE(cal.code == 0);
  const auto t = json::parse(test::slurp(dir / "cal.json"));
  CHECK(t["source"] == "cuda");
  CHECK(t["device"] == "NVIDIA H100 80GB HBM3");
  CHECK(!t["kernels"].empty());
  CHECK(!t["comms"].empty());

  // a trace with more kernels than the schedule has ops: refused, saying why
  auto extra = json::parse(test::slurp(dir / "kineto" / "rank3.json"));
  extra["traceEvents"].push_back({{"ph", "X"},
                                  {"cat", "kernel"},
                                  {"name", "void at::native::fill_kernel()"},
                                  {"pid", 3},
                                  {"tid", 7},
                                  {"ts", 1.0},
                                  {"dur", 1.0},
                                  {"args", {{"stream", 7}}}});
  test::write_text(dir / "kineto" / "rank3.json", extra.dump());
  c = test::run_cli_split("compare " + (dir / "kineto").string() + " " + (dir / "sim.json").string(), dir);
  CHECK(c.code == 1);
  CHECK(c.says("rank 3 has"));
  CHECK(c.says("one kernel per op"));
  fs::remove_all(dir);
}

TEST_CASE("kineto: the hand-made traces of tests/data/kineto are read, bad ones refused naming event and field") {
  const fs::path dir = test::scratch_dir("kineto-bad");
  const fs::path data = fs::path(TWINSCALE_SOURCE_DIR) / "tests" / "data" / "kineto";
  auto d = test::run_cli_split("diagnose " + data.string() + " --json", dir);
  INFO(d.out << d.err);
  REQUIRE((d.code == 0 || d.code == 4));
  auto j = json::parse(d.out);
  CHECK(j["ranks"] == 2);
  CHECK(j["steps"] == 2);

  auto bad = [&](const Kernel& k, const std::string& expect) {
    test::write_text(dir / "bad.json", kineto_rank(0, 1, {k}, {}).dump());
    const auto r = test::run_cli_split("diagnose " + (dir / "bad.json").string(), dir);
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(r.says("bad.json"));
    CHECK(r.says(expect));
  };
  // the generator writes 5 events before the kernel: it is $.traceEvents[3]
  bad({"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 13, 10, 5},
      "$.traceEvents[3].args.\"Collective name\": missing");
  bad({"ncclDevKernel_SendRecv(x)", 13, 10, 5, {{"Collective name", "gather"}}}, "\"gather\" is not a collective");
  bad({"ncclDevKernel_Reduce_Sum_f32_RING_LL(x)", 13, 10, 5}, "$.traceEvents[3].name: NCCL Reduce");
  bad({"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
       13,
       10,
       5,
       {{"Collective name", "allreduce"}, {"In msg nelems", -4}, {"Out msg nelems", 4}, {"dtype", "Float"}}},
      "$.traceEvents[3].args.\"In msg nelems\": expected a count");
  bad({"ncclDevKernel_AllReduce_Sum_f32_RING_LL(x)",
       13,
       10,
       5,
       {{"Collective name", "allreduce"}, {"In msg nelems", 4}, {"Out msg nelems", 4}, {"dtype", "Quaternion"}}},
      "$.traceEvents[3].args.dtype: unknown element type");
  bad({"gemm", 7, 10, -5}, "$.traceEvents[3].dur");
  auto two = kineto_rank(0, 1, {{"gemm", 7, 10, 5}, {"gemm", 7, 20, 5}}, {});
  two["traceEvents"][7]["pid"] = 1; // the second kernel on another device
  test::write_text(dir / "two.json", two.dump());
  auto r = test::run_cli_split("diagnose " + (dir / "two.json").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("two.json: $.traceEvents[7].pid: kernels of device 1 and of device 0"));
  auto none = kineto_rank(0, 1, {}, {});
  test::write_text(dir / "none.json", none.dump());
  r = test::run_cli_split("diagnose " + (dir / "none.json").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("no GPU kernel events"));
  fs::remove_all(dir);
}
