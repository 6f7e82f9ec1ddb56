// Chakra execution traces (formats/chakra.hpp): export → import gives back the same
// schedule on every tiny preset (and the simulator gives the same iteration), an ET
// written only with Chakra's own fields (as another tool would) imports into a schedule
// that validates and simulates, and bad ET files are refused naming the file and node.
#include <catch2/catch.hpp>

#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "config/cluster_file.hpp"
#include "config/job_file.hpp"
#include "formats/chakra.hpp"
#include "formats/et_def.pb.h"
#include "schedules/schedule_equal.hpp"
#include "schedules/schedule_json.hpp"
#include "schedules/validate.hpp"
#include "sim/simulate.hpp"
#include "tests/backend/mpi_helpers.hpp"
#include "tests/cli_runner.hpp"
#include "tests/skip.hpp"
#include "topology/fabric.hpp"
#include "topology/placement.hpp"

using namespace twinscale;
namespace s = twinscale::schedules;
namespace pb = ChakraProtoMsg;

namespace {

const std::vector<std::string> kTinyPresets = {"tiny-1f1b", "tiny-interleaved", "tiny-megascale",
                                               "tiny-cp",   "tiny-zb",          "tiny-fp8",
                                               "tiny-moe",  "tiny-moe-hier",    "tiny-moe-node-limited"};

std::vector<std::string> set_paths(const std::string& prefix, size_t n) {
  std::vector<std::string> p;
  for (size_t r = 0; r < n; ++r) p.push_back(formats::chakra_file_name(prefix, static_cast<int64_t>(r)));
  return p;
}

std::string json_of(const s::Schedule& sch) {
  std::ostringstream os;
  s::write_schedule_json(sch, os);
  return os.str();
}

double simulated_iteration_s(const s::Schedule& sch, sim::SimMode mode) {
  const topology::ClusterSpec spec = config::load_cluster(sch.job.cluster);
  const topology::Fabric fabric(spec);
  const auto gpus =
      topology::place(fabric, {sch.layout.tp, sch.layout.dp, sch.layout.pp}, topology::PlacementPolicy::Linear, 1);
  sim::SimOptions o;
  o.mode = mode;
  return sim::simulate(sch, fabric, gpus, o).iteration_time_s;
}

/// One ET file from its messages (Chakra's stream: varint length + message).
std::string et_file(const pb::GlobalMetadata& meta, const std::vector<pb::Node>& nodes) {
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

void attr_i64(pb::Node& n, const std::string& name, int64_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int64_val(v);
}
void attr_i32(pb::Node& n, const std::string& name, int32_t v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_int32_val(v);
}
void attr_str(pb::Node& n, const std::string& name, const std::string& v) {
  auto* a = n.add_attr();
  a->set_name(name);
  a->set_string_val(v);
}

pb::Node node(uint64_t id, const std::string& name, pb::NodeType type, std::vector<uint64_t> data_deps = {}) {
  pb::Node n;
  n.set_id(id);
  n.set_name(name);
  n.set_type(type);
  for (uint64_t d : data_deps) n.add_data_deps(d);
  return n;
}

/// A hand-written ET set for the tp 2 × pp 2 × dp 2 layout of tiny-1f1b, with Chakra's
/// own fields only: stage 0 computes a forward, sends the activation to its stage-1 peer,
/// stage 1 receives it and computes; then a TP all-reduce and a DP all-reduce per rank.
/// Node ids are not positions (they count by 10) to check that dependencies map by id.
std::vector<std::string> hand_written_set(const s::Layout& L) {
  std::vector<std::string> files;
  for (int64_t r = 0; r < L.world(); ++r) {
    const auto c = L.coord(r);
    pb::GlobalMetadata meta;
    meta.set_version("0.0.4");
    std::vector<pb::Node> nodes;
    auto comp = node(10, "fwd", pb::COMP_NODE);
    attr_i64(comp, "num_ops", 4'000'000'000);
    auto* ts = comp.add_attr();
    ts->set_name("tensor_size");
    ts->set_uint64_val(64 << 20);
    if (c.pp == 0) {
      nodes.push_back(comp);
      auto send = node(20, "send.act", pb::COMM_SEND_NODE, {10});
      attr_i32(send, "comm_dst", static_cast<int32_t>(L.rank({c.tp, c.dp, 1})));
      attr_i64(send, "comm_size", 8 << 20);
      nodes.push_back(send);
    } else {
      auto recv = node(20, "recv.act", pb::COMM_RECV_NODE);
      attr_i32(recv, "comm_src", static_cast<int32_t>(L.rank({c.tp, c.dp, 0})));
      attr_i64(recv, "comm_size", 8 << 20);
      nodes.push_back(recv);
      comp.add_data_deps(20);
      nodes.push_back(comp);
    }
    auto tp_ar = node(30, "tp.allreduce", pb::COMM_COLL_NODE, {10});
    attr_i64(tp_ar, "comm_type", pb::ALL_REDUCE);
    attr_i64(tp_ar, "comm_size", 16 << 20);
    attr_str(tp_ar, "pg_name", "tp");
    nodes.push_back(tp_ar);
    auto dp_ar = node(40, "dp.allreduce", pb::COMM_COLL_NODE);
    dp_ar.add_ctrl_deps(30);
    attr_i64(dp_ar, "comm_type", pb::ALL_REDUCE);
    attr_i64(dp_ar, "comm_size", 32 << 20);
    attr_str(dp_ar, "pg_name", "dp");
    nodes.push_back(dp_ar);
    files.push_back(et_file(meta, nodes));
  }
  return files;
}

s::Schedule tiny_base() {
  s::LoweringTarget t;
  t.check_memory = false;
  return s::lower(config::load_job_preset("tiny-1f1b"), t);
}

std::string import_error(const std::vector<std::string>& files, const std::optional<s::Schedule>& base) {
  try {
    formats::import_chakra(set_paths("bad", files.size()), files, base);
  } catch (const formats::ChakraError& e) {
    return e.what();
  }
  return "(no error)";
}

} // namespace

TEST_CASE("Chakra export → import gives back the same schedule on every tiny preset", "[formats][chakra]") {
  for (const auto& preset : kTinyPresets) {
    INFO(preset);
    const s::Schedule original = s::lower(config::load_job_preset(preset));
    const auto files = formats::export_chakra(original);
    REQUIRE(static_cast<int64_t>(files.size()) == original.world());
    const s::Schedule back = formats::import_chakra(set_paths("rt", files.size()), files, std::nullopt);
    std::string why;
    CHECK(schedules::schedules_equal(original, back, &why));
    INFO(why);
    CHECK(why.empty());
    CHECK(back.programs.size() == original.programs.size()); // ranks share programs again
    CHECK(json_of(back) == json_of(original));               // and the schedule file is the same bytes
    CHECK(s::validate(back).empty());
    CHECK(simulated_iteration_s(back, sim::SimMode::Analytic) ==
          simulated_iteration_s(original, sim::SimMode::Analytic));
    // deterministic: the same schedule writes the same files
    CHECK(formats::export_chakra(original) == files);
  }
}

TEST_CASE("schedules_equal notices a change of bytes, FLOPs, order or dependencies", "[formats][chakra]") {
  const s::Schedule a = s::lower(config::load_job_preset("tiny-1f1b"));
  std::string why;
  REQUIRE(schedules::schedules_equal(a, a, &why));
  auto changed = [&](auto&& edit) {
    s::Schedule b = a;
    edit(b.programs[b.program_of_rank[0]]); // the program of ranks 0..3 (stage 0)
    return schedules::schedules_equal(a, b, &why) ? std::string() : why;
  };
  const s::Program& p0 = a.program(0);
  size_t gemm = 0, comm = 0, with_deps = 0;
  while (p0.ops[gemm].flops <= 0) ++gemm;
  while (!p0.ops[comm].is_communication()) ++comm;
  while (p0.ops[with_deps].dep_count == 0) ++with_deps;
  const auto op = [](size_t i) { return "rank 0 op " + std::to_string(i) + ": "; };
  CHECK(changed([&](s::Program& p) { p.ops[comm].bytes += 1; }) == op(comm) + "bytes");
  CHECK(changed([&](s::Program& p) { p.ops[gemm].flops *= 2; }) == op(gemm) + "flops");
  CHECK(changed([&](s::Program& p) { std::swap(p.ops[gemm], p.ops[comm]); }) == op(std::min(gemm, comm)) + "kind");
  CHECK(changed([&](s::Program& p) { ++p.deps[p.ops[with_deps].dep_begin]; }) == op(with_deps) + "dependencies");
  CHECK(changed([&](s::Program& p) { p.ops[comm].group = s::GroupKind::World; }) == op(comm) + "group");
  CHECK(changed([&](s::Program& p) { p.ops.pop_back(); }).find(" ops") != std::string::npos);
}

TEST_CASE("A hand-written Chakra ET with only Chakra's fields imports into a schedule that runs", "[formats][chakra]") {
  const s::Schedule base = tiny_base();
  const auto files = hand_written_set(base.layout);
  const s::Schedule sch = formats::import_chakra(set_paths("hand", files.size()), files, base);
  CHECK(s::validate(sch).empty());
  REQUIRE(sch.world() == 8);
  const s::Program& first = sch.program(0);
  REQUIRE(first.ops.size() == 4);
  CHECK(first.ops[0].kind == s::OpKind::Gemm);
  CHECK(first.ops[0].flops == 4e9);
  CHECK(first.ops[0].bytes == 64 << 20);
  CHECK(first.ops[1].kind == s::OpKind::Send);
  CHECK(first.ops[1].group == s::GroupKind::Pp);
  CHECK(first.ops[1].peer == 1); // global rank 4 = pp rank 1 of rank 0's pipeline
  CHECK(first.ops[1].bytes == 8 << 20);
  CHECK(first.ops[2].kind == s::OpKind::AllReduce);
  CHECK(first.ops[2].group == s::GroupKind::Tp);
  CHECK(first.ops[3].group == s::GroupKind::Dp);
  CHECK(first.ops[3].bytes == 32 << 20);
  // data_deps by id, ctrl_deps kept unless the stream order implies them
  CHECK(std::vector<uint32_t>(first.deps_of(1).begin(), first.deps_of(1).end()) == std::vector<uint32_t>{0});
  CHECK(std::vector<uint32_t>(first.deps_of(3).begin(), first.deps_of(3).end()) == std::vector<uint32_t>{2});
  CHECK(sch.names[first.ops[1].name] == "send.act");
  const s::Program& last = sch.program(7); // stage 1: recv, then compute on it
  CHECK(last.ops[0].kind == s::OpKind::Recv);
  CHECK(last.ops[0].peer == 0);
  CHECK(std::vector<uint32_t>(last.deps_of(1).begin(), last.deps_of(1).end()) == std::vector<uint32_t>{0});
  CHECK(sch.programs.size() == 2); // one program per stage
  CHECK(simulated_iteration_s(sch, sim::SimMode::Analytic) > 0);
  CHECK(simulated_iteration_s(sch, sim::SimMode::Flow) > 0);
}

TEST_CASE("Bad Chakra ET files are refused naming the file and node", "[formats][chakra]") {
  const s::Schedule base = tiny_base();
  const auto good = hand_written_set(base.layout);
  auto with_rank0 = [&](const std::string& f0) {
    auto files = good;
    files[0] = f0;
    return files;
  };
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  auto comp = node(10, "fwd", pb::COMP_NODE);

  CHECK_THAT(import_error(with_rank0(""), base), Catch::Contains("bad.0.et: empty file"));
  CHECK_THAT(import_error(with_rank0(good[0].substr(0, good[0].size() - 3)), base),
             Catch::Contains("bad.0.et: node 3 of the file (after node id 30)"));
  CHECK_THAT(import_error(with_rank0(et_file(meta, {node(5, "x", pb::COMP_NODE, {99})})), base),
             Catch::Contains("bad.0.et: node id 5 (x): data_deps names node id 99, which is not earlier in this file"));
  CHECK_THAT(import_error(with_rank0(et_file(meta, {comp, comp})), base),
             Catch::Contains("bad.0.et: node id 10 (fwd): node id appears twice"));
  auto reduce = node(7, "red", pb::COMM_COLL_NODE);
  attr_i64(reduce, "comm_type", pb::REDUCE);
  attr_i64(reduce, "comm_size", 8);
  CHECK_THAT(
      import_error(with_rank0(et_file(meta, {reduce})), base),
      Catch::Contains("bad.0.et: node id 7 (red): comm_type 1 has no twinscale collective (valid: ALL_REDUCE 0"));
  auto no_size = node(8, "ar", pb::COMM_COLL_NODE);
  attr_i64(no_size, "comm_type", pb::ALL_REDUCE);
  CHECK_THAT(import_error(with_rank0(et_file(meta, {no_size})), base),
             Catch::Contains("bad.0.et: node id 8 (ar): missing attr \"comm_size\""));
  auto send = node(9, "s", pb::COMM_SEND_NODE);
  attr_i32(send, "comm_dst", 1); // rank 1 is a TP peer of rank 0, not a pipeline neighbour
  attr_i64(send, "comm_size", 8);
  CHECK_THAT(import_error(with_rank0(et_file(meta, {send})), base),
             Catch::Contains("bad.0.et: node id 9 (s): comm_dst 1 is not in rank 0's pipeline group"));
  CHECK_THAT(import_error(with_rank0(et_file(meta, {node(3, "m", pb::INVALID_NODE)})), base),
             Catch::Contains("bad.0.et: node id 3 (m): node type INVALID_NODE has no twinscale op"));
  auto bad_pg = node(4, "ar", pb::COMM_COLL_NODE);
  attr_i64(bad_pg, "comm_type", pb::ALL_REDUCE);
  attr_i64(bad_pg, "comm_size", 8);
  attr_str(bad_pg, "pg_name", "expert");
  CHECK_THAT(import_error(with_rank0(et_file(meta, {bad_pg})), base),
             Catch::Contains("pg_name \"expert\" is not a twinscale group (valid: tp, dp, pp, embedding, ep, cp, edp, "
                             "ep_node, ep_rail, world)"));
  // a set that is not the layout's size, and a foreign set without a job
  CHECK_THAT(import_error({good.begin(), good.begin() + 3}, base),
             Catch::Contains("bad.0.et: the set has 3 file(s) but the layout (tp 2, dp 2, pp 2) has 8 ranks"));
  CHECK_THAT(import_error(good, std::nullopt), Catch::Contains("bad.0.et: no GlobalMetadata \"ts.schedule_header\""));
  // a twinscale node with a broken attribute
  auto files = formats::export_chakra(s::lower(config::load_job_preset("tiny-1f1b")));
  const std::string needle(s::to_string(s::OpKind::Gemm));
  const auto at = files[2].find(needle);
  REQUIRE(at != std::string::npos);
  files[2].replace(at, 1, "X");
  CHECK_THAT(import_error(files, std::nullopt),
             Catch::Contains("bad.2.et: node id ") &&
                 Catch::Contains("attr \"ts.kind\": unknown value \"X" + needle.substr(1) + "\""));
  // an ET set that parses but cannot run (rank 0 sends, its peer never receives)
  auto unmatched = good;
  unmatched[4] = et_file(meta, {comp});
  const std::string sent = import_error(unmatched, base);
  CHECK(sent == "(no error)"); // import reads it; validate() refuses it (the CLI test below)
  const s::Schedule sch = formats::import_chakra(set_paths("u", unmatched.size()), unmatched, base);
  CHECK_FALSE(s::validate(sch).empty());
}

TEST_CASE("twinscale schedule export --format chakra and import-chakra", "[formats][chakra][cli]") {
  const auto dir = test::scratch_dir("chakra");
  const std::string prefix = (dir / "tiny").string();
  auto r = test::run_cli_split("schedule export --preset tiny-interleaved --format chakra --out " + prefix, dir);
  REQUIRE(r.code == 0);
  CHECK(std::filesystem::exists(prefix + ".7.et"));
  r = test::run_cli_split("schedule import-chakra " + prefix + " --out " + (dir / "back.json").string(), dir);
  REQUIRE(r.code == 0);
  CHECK(r.says("valid"));
  r = test::run_cli_split("schedule export --preset tiny-interleaved --out " + (dir / "orig.json").string(), dir);
  REQUIRE(r.code == 0);
  CHECK(test::slurp(dir / "back.json") == test::slurp(dir / "orig.json"));

  // a hand-written (foreign) set needs the job its ranks follow, and must validate
  const s::Schedule base = tiny_base();
  auto files = hand_written_set(base.layout);
  for (size_t i = 0; i < files.size(); ++i)
    test::write_text(formats::chakra_file_name((dir / "hand").string(), i), files[i]);
  r = test::run_cli_split("schedule import-chakra " + (dir / "hand").string() + " --out " + (dir / "h.json").string(),
                          dir);
  CHECK(r.code == 1);
  CHECK(r.says("hand.0.et: no GlobalMetadata"));
  r = test::run_cli_split("schedule import-chakra " + (dir / "hand").string() + " --preset tiny-1f1b --out " +
                              (dir / "h.json").string(),
                          dir);
  CHECK(r.code == 0);
  r = test::run_cli_split("schedule validate " + (dir / "h.json").string(), dir);
  CHECK(r.code == 0);
  // a set whose ranks do not match up is refused, and nothing is written
  pb::GlobalMetadata meta;
  meta.set_version("0.0.4");
  test::write_text(formats::chakra_file_name((dir / "hand").string(), 4), et_file(meta, {node(1, "c", pb::COMP_NODE)}));
  r = test::run_cli_split("schedule import-chakra " + (dir / "hand").string() + " --preset tiny-1f1b --out " +
                              (dir / "u.json").string(),
                          dir);
  CHECK(r.code == 1);
  CHECK(r.says("does not make a schedule that can run"));
  CHECK_FALSE(std::filesystem::exists(dir / "u.json"));
  r = test::run_cli_split("schedule import-chakra " + (dir / "none").string() + " --out " + (dir / "n.json").string(),
                          dir);
  CHECK(r.code == 1);
  CHECK(r.says("none.0.et: no such file"));
  r = test::run_cli_split("schedule export --preset tiny-1f1b --format xml --out " + (dir / "x").string(), dir);
  CHECK(r.code == 1);
  CHECK(r.says("valid values are json and chakra"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Imported Chakra ET sets run on 8 CPU ranks (twinscale run --schedule)", "[formats][chakra][cli][mpi]") {
  if (!backend::test::have_mpirun()) TWINSCALE_SKIP("mpirun not found");
  const auto dir = test::scratch_dir("chakra-run");
  // a twinscale export, round-tripped, and a hand-written set with Chakra's fields only
  const std::string tiny = (dir / "tiny").string(), hand = (dir / "hand").string();
  REQUIRE(test::run_cli_split("schedule export --preset tiny-interleaved --format chakra --out " + tiny, dir).code ==
          0);
  REQUIRE(test::run_cli_split("schedule import-chakra " + tiny + " --out " + tiny + ".json", dir).code == 0);
  const auto files = hand_written_set(tiny_base().layout);
  for (size_t i = 0; i < files.size(); ++i) test::write_text(formats::chakra_file_name(hand, i), files[i]);
  REQUIRE(
      test::run_cli_split("schedule import-chakra " + hand + " --preset tiny-1f1b --out " + hand + ".json", dir).code ==
      0);
  for (const std::string& sch : {tiny + ".json", hand + ".json"}) {
    INFO(sch);
    const auto r = backend::test::shell(
        backend::test::mpirun(8) + " " + TWINSCALE_CLI + " run --schedule " + sch + " --timeout 120", 300);
    INFO(r.output);
    CHECK(r.output.find("rank 0 of 8 (openmpi): completed") != std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("import-chakra refuses a header naming a cluster outside the ET set's folder", "[formats][chakra][cli]") {
  const auto dir = test::scratch_dir("chakra-path");
  s::Schedule sch = s::lower(config::load_job_preset("tiny-1f1b"));
  for (const std::string& cluster : {std::string("../../../etc/passwd"), std::string("/etc/shadow")}) {
    sch.job.cluster = cluster;
    const auto files = formats::export_chakra(sch);
    for (size_t i = 0; i < files.size(); ++i)
      test::write_text(formats::chakra_file_name((dir / "evil").string(), static_cast<int64_t>(i)), files[i]);
    const auto r = test::run_cli_split(
        "schedule import-chakra " + (dir / "evil").string() + " --out " + (dir / "evil.json").string(), dir);
    INFO(r.err);
    CHECK(r.code == 1);
    CHECK(r.says("job.cluster (GlobalMetadata header)"));
    CHECK(r.says("points outside the document's folder"));
    CHECK_FALSE(std::filesystem::exists(dir / "evil.json"));
  }
}
