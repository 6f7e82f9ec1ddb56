// Chakra ETs as Chakra's converter writes them from a PyTorch execution trace: a METADATA
// node "process_group:init" listing PyTorch's process groups, host operators
// (is_cpu_op = true) around the GPU kernels, MEM_LOAD/MEM_STORE nodes, numeric pg_names,
// and duration_micros on every node. Import skips what has no twinscale op (counted),
// passes dependencies through it, maps process groups onto the layout's groups by their
// ranks, and keeps the durations as a calibration table; what cannot be mapped is refused
// naming the file, node and field.
#include <catch2/catch.hpp>

#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <nlohmann/json.hpp>

#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "formats/chakra.hpp"
#include "formats/et_def.pb.h"
#include "schedules/validate.hpp"
#include "sim/simulate.hpp"
#include "tests/cli_runner.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
namespace s = twinscale::schedules;
namespace pb = ChakraProtoMsg;

namespace {

std::string et_bytes(const std::vector<pb::Node>& nodes) {
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  std::string bytes;
  google::protobuf::io::StringOutputStream sos(&bytes);
  google::protobuf::io::CodedOutputStream out(&sos);
  auto put = [&out](const google::protobuf::MessageLite& m) {
    out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
    m.SerializeWithCachedSizes(&out);
  };
  put(meta);
  for (const auto& n : nodes) put(n);
  out.Trim();
  return bytes;
}

pb::AttributeProto* attr(pb::Node& n, const std::string& name) {
  auto* a = n.add_attr();
  a->set_name(name);
  return a;
}

pb::Node node(uint64_t id, const std::string& name, pb::NodeType type, uint64_t micros,
              std::vector<uint64_t> ctrl = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  n.set_duration_micros(micros);
  for (uint64_t d : ctrl) n.add_ctrl_deps(d);
  return n;
}

/// The process groups as PyTorch lists them (every rank knows every group): "0" the
/// default group, then one per TP group, then one per DP group; the name of rank r's.
struct Groups {
  std::string text; // the METADATA node's inputs.values, as Chakra's converter keeps it
  std::vector<std::string> tp_of, dp_of, pp_of;
};
Groups process_groups(const s::Layout& L) {
  Groups g;
  g.tp_of.resize(static_cast<size_t>(L.world()));
  g.dp_of.resize(static_cast<size_t>(L.world()));
  g.pp_of.resize(static_cast<size_t>(L.world()));
  nlohmann::json list = nlohmann::json::array();
  list.push_back(
      {{"pg_name", "0"}, {"pg_desc", "default_pg"}, {"pg_size", L.world()}, {"ranks", nlohmann::json::array()}});
  for (const s::GroupKind k : {s::GroupKind::Tp, s::GroupKind::Dp, s::GroupKind::Pp}) {
    std::map<std::vector<int64_t>, std::string> names;
    for (int64_t r = 0; r < L.world(); ++r) {
      const auto members = L.group_members(k, r);
      auto [it, fresh] = names.emplace(members, std::to_string(list.size()));
      if (fresh)
        list.push_back({{"pg_name", it->second},
                        {"pg_desc", std::string(s::to_string(k)) + "_group"},
                        {"pg_size", members.size()},
                        {"ranks", members}});
      (k == s::GroupKind::Tp   ? g.tp_of
       : k == s::GroupKind::Dp ? g.dp_of
                               : g.pp_of)[static_cast<size_t>(r)] = it->second;
    }
  }
  g.text = "['" + list.dump() + "']"; // a Python list holding the JSON text
  return g;
}

/// Rank r's ET: process-group METADATA, a host operator launching a GEMM kernel, a
/// memory load, a TP and a DP all-reduce (numeric pg_names), then stage 0 sends to stage
/// 1 on their two-rank group (no comm_dst/comm_src, as Chakra's converter writes it); all
/// with durations but the receive.
std::string pytorch_et(int64_t r, const s::Layout& L, const Groups& g) {
  std::vector<pb::Node> nodes;
  auto meta = node(2, "## process_group:init ##", pb::METADATA_NODE, 0);
  meta.mutable_inputs()->set_values(g.text);
  nodes.push_back(meta);
  auto host = node(5, "aten::mm", pb::COMP_NODE, 45, {2});
  attr(host, "is_cpu_op")->set_bool_val(true);
  attr(host, "rf_id")->set_int64_val(17);
  nodes.push_back(host);
  auto gemm = node(6, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", pb::COMP_NODE, 120, {5});
  attr(gemm, "is_cpu_op")->set_bool_val(false);
  attr(gemm, "num_ops")->set_int64_val(4'000'000'000);
  attr(gemm, "tensor_size")->set_uint64_val(64 << 20);
  attr(gemm, "stream")->set_int64_val(7);
  nodes.push_back(gemm);
  auto load = node(7, "mem.load", pb::MEM_LOAD_NODE, 3, {6});
  attr(load, "tensor_size")->set_uint64_val(1 << 20);
  nodes.push_back(load);
  auto tp = node(9, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", pb::COMM_COLL_NODE, 30 + 10 * (r == 3));
  tp.add_data_deps(7); // through the skipped memory node: on the GEMM
  attr(tp, "is_cpu_op")->set_bool_val(false);
  attr(tp, "comm_type")->set_int64_val(pb::ALL_REDUCE);
  attr(tp, "comm_size")->set_int64_val(1 << 20);
  attr(tp, "pg_name")->set_string_val(g.tp_of[static_cast<size_t>(r)]);
  nodes.push_back(tp);
  auto store = node(10, "mem.store", pb::MEM_STORE_NODE, 2, {9});
  nodes.push_back(store);
  auto dp = node(11, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", pb::COMM_COLL_NODE, 50, {10});
  attr(dp, "is_cpu_op")->set_bool_val(false);
  attr(dp, "comm_type")->set_int64_val(pb::ALL_REDUCE);
  attr(dp, "comm_size")->set_int64_val(4 << 20);
  attr(dp, "pg_name")->set_string_val(g.dp_of[static_cast<size_t>(r)]);
  nodes.push_back(dp);
  const bool first = L.coord(r).pp == 0;
  auto p2p = node(12, "ncclDevKernel_SendRecv", first ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE, first ? 10 : 0, {11});
  attr(p2p, "comm_size")->set_int64_val(8 << 20);
  attr(p2p, "pg_name")->set_string_val(g.pp_of[static_cast<size_t>(r)]);
  nodes.push_back(p2p);
  return et_bytes(nodes);
}

/// The analytic simulation's iteration time of `sch`, with `calibration` if given.
double iteration_s(const s::Schedule& sch, const s::CalibrationTable* calibration) {
  const topology::Fabric fabric(config::load_cluster(sch.job.cluster));
  const auto gpus =
      topology::place(fabric, {sch.layout.tp, sch.layout.dp, sch.layout.pp}, topology::PlacementPolicy::Linear, 1);
  sim::SimOptions o;
  o.mode = sim::SimMode::Analytic;
  o.calibration = calibration;
  return sim::simulate(sch, fabric, gpus, o).iteration_time_s;
}

s::Schedule tiny_base() {
  s::LoweringTarget t;
  t.check_memory = false;
  return s::lower(config::load_job_preset("tiny-1f1b"), t);
}

std::vector<std::string> paths_of(size_t n) {
  std::vector<std::string> p;
  for (size_t r = 0; r < n; ++r) p.push_back(formats::chakra_file_name("pt", static_cast<int64_t>(r)));
  return p;
}

std::vector<std::string> pytorch_set(const s::Layout& L) {
  const Groups g = process_groups(L);
  std::vector<std::string> files;
  for (int64_t r = 0; r < L.world(); ++r) files.push_back(pytorch_et(r, L, g));
  return files;
}

} // namespace

TEST_CASE("A PyTorch-style Chakra ET imports: METADATA, MEM and host nodes skipped, groups and durations kept",
          "[formats][chakra]") {
  const s::Schedule base = tiny_base();
  const auto files = pytorch_set(base.layout);
  formats::ChakraImportReport report;
  const s::Schedule sch = formats::import_chakra(paths_of(files.size()), files, base, &report);
  CHECK(s::validate(sch).empty());
  CHECK(report.metadata_nodes == 8);
  CHECK(report.memory_nodes == 16);
  CHECK(report.memory_bytes == 8.0 * (1 << 20));
  CHECK(report.host_nodes == 8);
  const s::Program& p = sch.program(0);
  REQUIRE(p.ops.size() == 4);
  CHECK(p.ops[3].kind == s::OpKind::Send);
  CHECK(p.ops[3].peer == 1); // the other member of its pipeline pair
  CHECK(p.ops[0].kind == s::OpKind::Gemm);
  CHECK(p.ops[0].flops == 4e9);
  CHECK(p.ops[1].group == s::GroupKind::Tp);
  CHECK(p.ops[2].group == s::GroupKind::Dp);
  CHECK(p.ops[2].bytes == 4 << 20);
  // the TP all-reduce read the skipped memory node: it depends on the GEMM before it
  CHECK(std::vector<uint32_t>(p.deps_of(1).begin(), p.deps_of(1).end()) == std::vector<uint32_t>{0});
  CHECK(report.process_groups.size() == 8); // 4 TP and 4 DP groups named "1" … "8" (pipeline pairs: peers)
  CHECK(report.process_groups.at("1") == "tp");
  REQUIRE(report.durations.size() == 28); // 3 a rank, and the sends
  CHECK(report.durations[0].seconds == Approx(120e-6));

  const s::CalibrationTable t = formats::calibration_of_durations(sch, report, "test");
  CHECK(t.source == "chakra");
  REQUIRE(t.kernels.size() == 1);
  CHECK(t.kernels[0].seconds == Approx(120e-6));
  CHECK(t.kernels[0].samples == 8);
  REQUIRE(t.comms.size() == 3); // TP 1 MiB and DP 4 MiB all-reduces, both of 2 ranks, and the send
  CHECK(t.comms[0].bytes == 1 << 20);
  CHECK(t.comms[0].seconds == Approx(30e-6)); // median: rank 3's slower one does not move it
  CHECK(t.comms[1].seconds == Approx(50e-6));
  CHECK(t.comms[2].kind == s::OpKind::Send);
  CHECK(t.comms[2].seconds == Approx(10e-6));
  // simulated with the measured durations: GEMM, TP, DP all-reduce, send, one after another
  CHECK(iteration_s(sch, &t) == Approx(120e-6 + 30e-6 + 50e-6 + 10e-6).epsilon(0.02));
  CHECK(iteration_s(sch, nullptr) != Approx(iteration_s(sch, &t)).epsilon(0.02));
}

TEST_CASE("PyTorch-style Chakra ETs that cannot be mapped are refused naming the node and field", "[formats][chakra]") {
  const s::Schedule base = tiny_base();
  const Groups g = process_groups(base.layout);
  auto error_with_rank0 = [&](const std::vector<pb::Node>& nodes) {
    auto files = pytorch_set(base.layout);
    files[0] = et_bytes(nodes);
    try {
      formats::import_chakra(paths_of(files.size()), files, base);
    } catch (const formats::ChakraError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  auto meta = node(2, "## process_group:init ##", pb::METADATA_NODE, 0);
  meta.mutable_inputs()->set_values(g.text);
  auto ar = node(9, "allreduce", pb::COMM_COLL_NODE, 30);
  attr(ar, "comm_type")->set_int64_val(pb::ALL_REDUCE);
  attr(ar, "comm_size")->set_int64_val(8);
  auto undefined = ar;
  attr(undefined, "pg_name")->set_string_val("42");
  CHECK_THAT(error_with_rank0({meta, undefined}),
             Catch::Contains("pt.0.et: node id 9 (allreduce): pg_name \"42\" is not a twinscale group") &&
                 Catch::Contains("no METADATA node \"process_group:init\" of the file defines"));
  auto foreign = ar; // the TP group of rank 2, not rank 0's
  attr(foreign, "pg_name")->set_string_val(g.tp_of[2]);
  CHECK_THAT(error_with_rank0({meta, foreign}),
             Catch::Contains("pt.0.et: node id 9 (allreduce): pg_name \"" + g.tp_of[2] + "\" (ranks [") &&
                 Catch::Contains("is no group of rank 0 in the layout"));
  auto host = node(5, "aten::mm", pb::COMP_NODE, 45);
  attr(host, "is_cpu_op")->set_int64_val(1);
  CHECK_THAT(error_with_rank0({host}),
             Catch::Contains("pt.0.et: node id 5 (aten::mm): attr \"is_cpu_op\" must be a bool"));
  auto load = node(7, "mem.load", pb::MEM_LOAD_NODE, 3);
  attr(load, "tensor_size")->set_string_val("1 MiB");
  CHECK_THAT(error_with_rank0({load}),
             Catch::Contains("pt.0.et: node id 7 (mem.load): attr \"tensor_size\" must hold an integer"));
  auto send = node(12, "send", pb::COMM_SEND_NODE, 3);
  attr(send, "comm_size")->set_int64_val(8);
  attr(send, "pg_name")->set_string_val(g.tp_of[0]); // rank 0's TP pair: not its pipeline group
  CHECK_THAT(error_with_rank0({meta, send}),
             Catch::Contains("pt.0.et: node id 12 (send): comm_dst 1 is not in rank 0's pipeline group"));
  auto lone = node(12, "send", pb::COMM_SEND_NODE, 3);
  attr(lone, "comm_size")->set_int64_val(8);
  attr(lone, "pg_name")->set_string_val("0"); // the default group: 8 ranks
  CHECK_THAT(error_with_rank0({meta, lone}),
             Catch::Contains("pt.0.et: node id 12 (send): missing attr \"comm_dst\", and pg_name \"0\" is not a "
                             "process group of rank 0 and one peer"));
  auto after = node(8, "gemm", pb::COMP_NODE, 3, {99});
  CHECK_THAT(error_with_rank0({meta, after}),
             Catch::Contains("pt.0.et: node id 8 (gemm): ctrl_deps names node id 99, which is not earlier"));
}

TEST_CASE("schedule import-chakra of a PyTorch-style set reports what it skipped and writes the durations",
          "[formats][chakra][cli]") {
  const auto dir = test::scratch_dir("chakra-pytorch");
  const auto files = pytorch_set(tiny_base().layout);
  for (size_t r = 0; r < files.size(); ++r) test::write_text(dir / ("pt." + std::to_string(r) + ".et"), files[r]);
  const auto r =
      test::run_cli_split("schedule import-chakra " + (dir / "pt").string() + " --preset tiny-1f1b --out " +
                              (dir / "s.json").string() + " --calibration-out " + (dir / "cal.json").string(),
                          dir);
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.says("skipped 8 METADATA node(s), 16 MEM_LOAD/MEM_STORE node(s)"));
  CHECK(r.says("8 host (is_cpu_op) node(s)"));
  CHECK(r.says("process group \"1\" is the tp group"));
  const auto cal = nlohmann::json::parse(test::slurp(dir / "cal.json"));
  CHECK(cal["source"] == "chakra");
  CHECK(cal["kernels"].size() == 1);
  std::filesystem::remove_all(dir);
}
