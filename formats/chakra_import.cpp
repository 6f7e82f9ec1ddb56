// Chakra ET files → schedule (formats/chakra.hpp).
#include <algorithm>
#include <filesystem>
#include <map>
#include <regex>
#include <sstream>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "formats/chakra.hpp"
#include "formats/detail/chakra_attrs.hpp"
#include "formats/et_def.pb.h"
#include "schedules/error.hpp"
#include "schedules/input_file.hpp"
#include "schedules/schedule_json.hpp"

namespace twinscale::formats {

namespace {
namespace s = twinscale::schedules;
namespace pb = ChakraProtoMsg;
using namespace detail;

struct EtFile {
  pb::GlobalMetadata meta;
  std::vector<pb::Node> nodes;
};

/// Reads one length-delimited message; false at a clean end of the stream.
bool read_delimited(google::protobuf::io::CodedInputStream& in, size_t total, google::protobuf::MessageLite& m,
                    const std::string& what) {
  if (static_cast<size_t>(in.CurrentPosition()) >= total) return false;
  uint32_t size = 0;
  if (!in.ReadVarint32(&size)) throw ChakraError(what + ": truncated length prefix");
  const auto limit = in.PushLimit(static_cast<int>(size));
  if (!m.ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0)
    throw ChakraError(what + ": not a valid message of " + std::to_string(size) + " bytes (truncated or not Chakra)");
  in.PopLimit(limit);
  return true;
}

EtFile parse(const std::string& path, const std::string& bytes) {
  google::protobuf::io::ArrayInputStream raw(bytes.data(), static_cast<int>(bytes.size()));
  google::protobuf::io::CodedInputStream in(&raw);
  EtFile f;
  if (!read_delimited(in, bytes.size(), f.meta, path + ": GlobalMetadata"))
    throw ChakraError(path + ": empty file (a Chakra ET starts with a GlobalMetadata message)");
  for (;;) {
    pb::Node n;
    const std::string what =
        path + ": node " + std::to_string(f.nodes.size()) + " of the file" +
        (f.nodes.empty() ? std::string() : " (after node id " + std::to_string(f.nodes.back().id()) + ")");
    if (!read_delimited(in, bytes.size(), n, what)) break;
    f.nodes.push_back(std::move(n));
  }
  return f;
}

const pb::AttributeProto* find_attr(const google::protobuf::RepeatedPtrField<pb::AttributeProto>& attrs,
                                    const std::string& name) {
  for (const auto& a : attrs)
    if (a.name() == name) return &a;
  return nullptr;
}

std::optional<int64_t> int_value(const pb::AttributeProto& a) {
  using V = pb::AttributeProto;
  switch (a.value_case()) {
  case V::kInt32Val: return a.int32_val();
  case V::kInt64Val: return a.int64_val();
  case V::kUint32Val: return a.uint32_val();
  case V::kUint64Val:
    if (a.uint64_val() > static_cast<uint64_t>(INT64_MAX)) return std::nullopt;
    return static_cast<int64_t>(a.uint64_val());
  case V::kSint32Val: return a.sint32_val();
  case V::kSint64Val: return a.sint64_val();
  default: return std::nullopt;
  }
}

/// Where an error is: "FILE: node ID (NAME)".
struct NodeWhere {
  const std::string& path;
  const pb::Node& node;
  std::string str() const {
    return path + ": node id " + std::to_string(node.id()) + (node.name().empty() ? "" : " (" + node.name() + ")");
  }
  [[noreturn]] void fail(const std::string& why) const { throw ChakraError(str() + ": " + why); }

  const pb::AttributeProto& attr(const char* name) const {
    const auto* a = find_attr(node.attr(), name);
    if (a == nullptr) fail(std::string("missing attr \"") + name + "\"");
    return *a;
  }
  int64_t integer(const char* name) const {
    const auto v = int_value(attr(name));
    if (!v) fail(std::string("attr \"") + name + "\" must hold an integer (int32/int64/uint32/uint64)");
    return *v;
  }
  int32_t int32(const char* name) const {
    const int64_t v = integer(name);
    if (v < INT32_MIN || v > INT32_MAX) fail(std::string("attr \"") + name + "\" is out of the 32-bit range");
    return static_cast<int32_t>(v);
  }
  double real(const char* name) const {
    const auto& a = attr(name);
    if (a.value_case() == pb::AttributeProto::kDoubleVal) return a.double_val();
    if (const auto v = int_value(a)) return static_cast<double>(*v);
    fail(std::string("attr \"") + name + "\" must hold a number");
  }
  std::string text(const char* name) const {
    const auto& a = attr(name);
    if (a.value_case() != pb::AttributeProto::kStringVal) fail(std::string("attr \"") + name + "\" must be a string");
    return a.string_val();
  }
  template <class T>
  T choice(const char* name, std::optional<T> (*from)(std::string_view)) const {
    const std::string v = text(name);
    const auto r = from(v);
    if (!r) fail(std::string("attr \"") + name + "\": unknown value \"" + v + "\"");
    return *r;
  }
};

/// A node written by twinscale's exporter: every field from its "ts.*" attrs.
s::Op twinscale_op(const NodeWhere& w) {
  s::Op op;
  op.kind = w.choice<s::OpKind>(kKind, s::op_kind_from_string);
  op.kernel = w.choice<s::Kernel>(kKernel, s::kernel_from_string);
  op.stream = w.choice<s::Stream>(kStream, s::stream_from_string);
  op.dtype = w.choice<s::DType>(kDtype, s::dtype_from_string);
  op.group = w.choice<s::GroupKind>(kGroup, s::group_kind_from_string);
  op.priority = w.int32(kPriority);
  op.peer = w.int32(kPeer);
  op.flops = w.real(kFlops);
  op.bytes = w.real(kBytes);
  const auto& shape = w.attr(kShape);
  if (shape.value_case() != pb::AttributeProto::kInt64List || shape.int64_list().values_size() != 4)
    w.fail(std::string("attr \"") + kShape + "\" must be an int64 list of 4 values");
  for (int i = 0; i < 4; ++i) op.shape[static_cast<size_t>(i)] = shape.int64_list().values(i);
  op.labels.iteration = w.int32(kIteration);
  op.labels.micro_batch = w.int32(kMicroBatch);
  op.labels.chunk = w.int32(kChunk);
  op.labels.layer = w.int32(kLayer);
  op.labels.phase = w.choice<s::Phase>(kPhase, s::phase_from_string);
  return op;
}

/// PyTorch's process groups as a METADATA node "process_group:init" of a converted
/// execution trace lists them: pg_name → member ranks (empty when not listed) and size.
struct ProcessGroup {
  std::vector<int64_t> ranks;
  int64_t size = 0;
};
using ProcessGroups = std::map<std::string, ProcessGroup>;

/// The process groups a METADATA node defines: every {"pg_name": …, "ranks": […] or
/// "[…]", "pg_size": …} object in its inputs' values or string attrs (PyTorch writes the
/// list as JSON; Chakra's converter keeps it as text).
void read_process_groups(const pb::Node& n, ProcessGroups& out) {
  std::string text = n.inputs().values();
  for (const auto& a : n.attr())
    if (a.value_case() == pb::AttributeProto::kStringVal) text += "\n" + a.string_val();
  text.erase(std::remove(text.begin(), text.end(), '\\'), text.end());
  static const std::regex object(R"re(\{[^{}]*"pg_name"[^{}]*\})re");
  static const std::regex name(R"re("pg_name"\s*:\s*"([^"]*)")re");
  static const std::regex ranks(R"re("ranks"\s*:\s*"?\[([0-9,\s]*)\])re");
  static const std::regex size(R"re("pg_size"\s*:\s*([0-9]+))re");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), object); it != std::sregex_iterator(); ++it) {
    const std::string o = it->str();
    std::smatch m;
    if (!std::regex_search(o, m, name)) continue;
    ProcessGroup g;
    const std::string pg = m[1];
    if (std::regex_search(o, m, ranks)) {
      std::istringstream list(std::regex_replace(m[1].str(), std::regex(","), " "));
      for (int64_t r = 0; list >> r;) g.ranks.push_back(r);
    }
    if (std::regex_search(o, m, size) && m[1].length() < 10) g.size = std::stoll(m[1]);
    out[pg] = std::move(g);
  }
}

/// The twinscale group of `rank` whose members are `g`'s (all ranks when g lists none and
/// has the world's size); nullopt when no group of the layout has them.
std::optional<s::GroupKind> group_of(const ProcessGroup& g, const s::Layout& layout, int64_t rank) {
  if (g.ranks.empty()) {
    if (g.size == layout.world()) return s::GroupKind::World;
    return std::nullopt;
  }
  std::vector<int64_t> want = g.ranks;
  std::sort(want.begin(), want.end());
  for (const s::GroupKind k : {s::GroupKind::Tp, s::GroupKind::Pp, s::GroupKind::Dp, s::GroupKind::Cp, s::GroupKind::Ep,
                               s::GroupKind::ExpertDp, s::GroupKind::World}) {
    auto members = layout.group_members(k, rank);
    std::sort(members.begin(), members.end());
    if (members == want) return k;
  }
  return std::nullopt;
}

s::GroupKind pg_group(const NodeWhere& w, const ProcessGroups& pgs, const s::Layout& layout, int64_t rank,
                      ChakraImportReport& report) {
  if (find_attr(w.node.attr(), "pg_name") == nullptr) return s::GroupKind::World;
  const std::string pg = w.text("pg_name");
  if (const auto g = s::group_kind_from_string(pg)) return *g;
  const auto it = pgs.find(pg);
  if (it == pgs.end())
    w.fail("pg_name \"" + pg +
           "\" is not a twinscale group (valid: tp, dp, pp, embedding, ep, cp, edp, ep_node, ep_rail, world), and "
           "no METADATA node \"process_group:init\" of the file defines a process group of that name");
  const auto g = group_of(it->second, layout, rank);
  if (!g) {
    std::string list;
    for (const int64_t r : it->second.ranks) list += (list.empty() ? "" : ", ") + std::to_string(r);
    w.fail("pg_name \"" + pg + "\" (ranks [" + list + "], size " + std::to_string(it->second.size) +
           ") is no group of rank " + std::to_string(rank) + " in the layout (tp " + std::to_string(layout.tp) +
           ", dp " + std::to_string(layout.dp) + ", pp " + std::to_string(layout.pp) + ")");
  }
  report.process_groups[pg] = std::string(s::to_string(*g));
  return *g;
}

/// The global rank a send or receive node talks to: comm_dst / comm_src, else (Chakra's
/// PyTorch converter writes neither) the other member of its two-rank process group.
int64_t p2p_peer(const NodeWhere& w, const ProcessGroups& pgs, int64_t rank, bool send) {
  const char* field = send ? "comm_dst" : "comm_src";
  if (find_attr(w.node.attr(), field) || find_attr(w.node.attr(), "pg_name") == nullptr) return w.integer(field);
  const std::string pg = w.text("pg_name");
  const auto it = pgs.find(pg);
  const std::vector<int64_t>* ranks = it == pgs.end() ? nullptr : &it->second.ranks;
  if (ranks == nullptr || ranks->size() != 2 || std::find(ranks->begin(), ranks->end(), rank) == ranks->end())
    w.fail(std::string("missing attr \"") + field + "\", and pg_name \"" + pg + "\" is not a process group of rank " +
           std::to_string(rank) +
           " and one peer (listed by a METADATA node \"process_group:init\") that would name the peer");
  return (*ranks)[0] == rank ? (*ranks)[1] : (*ranks)[0];
}

/// A node of another tool: mapped from Chakra's own fields (formats/chakra.hpp).
s::Op chakra_op(const NodeWhere& w, const s::Layout& layout, int64_t rank, const ProcessGroups& pgs,
                ChakraImportReport& report) {
  s::Op op;
  switch (w.node.type()) {
  case pb::COMP_NODE:
    op.kind = s::OpKind::Gemm; // shape unknown: costed without a shape penalty
    op.kernel = s::Kernel::Gemm;
    op.stream = s::Stream::Compute;
    op.flops = find_attr(w.node.attr(), "num_ops") ? static_cast<double>(w.integer("num_ops")) : 0.0;
    op.bytes = find_attr(w.node.attr(), "tensor_size") ? static_cast<double>(w.integer("tensor_size")) : 0.0;
    if (op.flops < 0 || op.bytes < 0) w.fail("num_ops and tensor_size must be ≥ 0");
    return op;
  case pb::COMM_COLL_NODE: {
    const int64_t t = w.integer("comm_type");
    const auto kind = op_kind_of_comm_type(t);
    if (!kind)
      w.fail("comm_type " + std::to_string(t) +
             " has no twinscale collective (valid: ALL_REDUCE 0, ALL_GATHER 2, BROADCAST 5, ALL_TO_ALL 6, "
             "REDUCE_SCATTER 7)");
    op.kind = *kind;
    op.group = pg_group(w, pgs, layout, rank, report);
    op.stream = op.group == s::GroupKind::Tp ? s::Stream::TpComm : s::Stream::DpComm;
    op.bytes = static_cast<double>(w.integer("comm_size"));
    if (op.bytes < 0) w.fail("comm_size must be ≥ 0");
    return op;
  }
  case pb::COMM_SEND_NODE:
  case pb::COMM_RECV_NODE: {
    const bool send = w.node.type() == pb::COMM_SEND_NODE;
    op.kind = send ? s::OpKind::Send : s::OpKind::Recv;
    op.stream = send ? s::Stream::PpSend : s::Stream::PpRecv;
    op.group = s::GroupKind::Pp;
    const int64_t peer = p2p_peer(w, pgs, rank, send);
    const auto members = layout.group_members(s::GroupKind::Pp, rank);
    const auto it = std::find(members.begin(), members.end(), peer);
    if (it == members.end())
      w.fail(std::string(send ? "comm_dst " : "comm_src ") + std::to_string(peer) + " is not in rank " +
             std::to_string(rank) + "'s pipeline group (twinscale's point-to-point ops run between pipeline stages)");
    op.peer = static_cast<int32_t>(it - members.begin());
    op.bytes = static_cast<double>(w.integer("comm_size"));
    if (op.bytes < 0) w.fail("comm_size must be ≥ 0");
    return op;
  }
  default:
    w.fail("node type " + pb::NodeType_Name(w.node.type()) +
           " has no twinscale op (valid: COMP_NODE, COMM_COLL_NODE, COMM_SEND_NODE, COMM_RECV_NODE; METADATA_NODE, "
           "MEM_LOAD_NODE and MEM_STORE_NODE are skipped)");
  }
}

class Names {
public:
  explicit Names(std::vector<std::string>& names) : names_(names) {
    for (size_t i = 0; i < names.size(); ++i) index_.emplace(names[i], static_cast<uint32_t>(i));
  }
  uint32_t intern(const std::string& n) {
    const auto [it, fresh] = index_.emplace(n, static_cast<uint32_t>(names_.size()));
    if (fresh) names_.push_back(n);
    return it->second;
  }

private:
  std::vector<std::string>& names_;
  std::unordered_map<std::string, uint32_t> index_;
};

/// Whether a node is skipped (counted in `report`): METADATA, MEM_LOAD/MEM_STORE and host
/// operators (is_cpu_op) of another tool's ET. twinscale's programs are the GPU's ops:
/// memory is an estimate, not per-op transfers; host operators only launch them.
bool skipped(const NodeWhere& w, ChakraImportReport& report) {
  const pb::Node& n = w.node;
  if (find_attr(n.attr(), kKind)) return false;
  switch (n.type()) {
  case pb::METADATA_NODE: ++report.metadata_nodes; return true;
  case pb::MEM_LOAD_NODE:
  case pb::MEM_STORE_NODE:
    ++report.memory_nodes;
    if (find_attr(n.attr(), "tensor_size")) report.memory_bytes += static_cast<double>(w.integer("tensor_size"));
    return true;
  case pb::COMP_NODE: {
    const auto* cpu = find_attr(n.attr(), "is_cpu_op");
    if (cpu == nullptr) return false;
    if (cpu->value_case() != pb::AttributeProto::kBoolVal) w.fail("attr \"is_cpu_op\" must be a bool");
    if (cpu->bool_val()) ++report.host_nodes;
    return cpu->bool_val();
  }
  default: return false;
  }
}

s::Program program_of(const std::string& path, const EtFile& f, const s::Layout& layout, int64_t rank, Names& names,
                      ChakraImportReport& report) {
  ProcessGroups pgs;
  for (const pb::Node& n : f.nodes)
    if (n.type() == pb::METADATA_NODE) read_process_groups(n, pgs);
  s::Program prog;
  // node id → the op positions it stands for: its own, or for a skipped node what it
  // depended on (so that a dependency passes through it)
  std::unordered_map<uint64_t, std::vector<uint32_t>> position;
  std::array<int64_t, s::kStreamCount> last;
  last.fill(-1);
  for (size_t i = 0; i < f.nodes.size(); ++i) {
    const pb::Node& n = f.nodes[i];
    const NodeWhere w{path, n};
    if (position.count(n.id())) w.fail("node id appears twice in the file");
    std::vector<uint32_t> deps;
    auto add_deps = [&](uint64_t d, const char* field) {
      const auto it = position.find(d);
      if (it == position.end())
        w.fail(std::string(field) + " names node id " + std::to_string(d) +
               (d == n.id() ? ", itself"
                            : ", which is not earlier in this file (nodes must come after what they "
                              "depend on)"));
      for (const uint32_t p : it->second)
        if (std::find(deps.begin(), deps.end(), p) == deps.end()) deps.push_back(p);
    };
    for (uint64_t d : n.data_deps()) add_deps(d, "data_deps");
    const size_t data_count = deps.size();
    for (uint64_t d : n.ctrl_deps()) add_deps(d, "ctrl_deps");
    if (skipped(w, report)) {
      position.emplace(n.id(), std::move(deps));
      continue;
    }
    const auto self = static_cast<uint32_t>(prog.ops.size());
    s::Op op = find_attr(n.attr(), kKind) ? twinscale_op(w) : chakra_op(w, layout, rank, pgs, report);
    op.name = names.intern(n.name());
    op.dep_begin = static_cast<uint32_t>(prog.deps.size());
    // ctrl_deps: the previous op on the same stream is implied by the stream order
    const int64_t prev = last[static_cast<size_t>(op.stream)];
    for (size_t k = 0; k < deps.size(); ++k)
      if (k < data_count || static_cast<int64_t>(deps[k]) != prev) prog.deps.push_back(deps[k]);
    op.dep_count = static_cast<uint32_t>(prog.deps.size() - op.dep_begin);
    last[static_cast<size_t>(op.stream)] = static_cast<int64_t>(self);
    if (n.duration_micros() > 0)
      report.durations.push_back({rank, self, static_cast<double>(n.duration_micros()) * 1e-6});
    prog.ops.push_back(op);
    position.emplace(n.id(), std::vector<uint32_t>{self});
  }
  return prog;
}

/// A byte key of a program, for sharing equal programs between ranks.
std::string program_key(const s::Program& p) {
  std::string k;
  auto put = [&k](const auto& v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
  for (const s::Op& op : p.ops) {
    put(op.kind), put(op.kernel), put(op.stream), put(op.dtype), put(op.group), put(op.priority), put(op.peer);
    put(op.flops), put(op.bytes), put(op.shape), put(op.labels.iteration), put(op.labels.micro_batch);
    put(op.labels.chunk), put(op.labels.layer), put(op.labels.phase), put(op.name), put(op.dep_count);
  }
  for (uint32_t d : p.deps) put(d);
  return k;
}

s::Schedule header_of(const std::string& path, const EtFile& f0, const std::optional<s::Schedule>& base) {
  if (const auto* h = find_attr(f0.meta.attr(), kHeader)) {
    if (h->value_case() != pb::AttributeProto::kStringVal)
      throw ChakraError(path + ": GlobalMetadata attr \"" + kHeader + "\" must be a string");
    std::istringstream in(h->string_val());
    try {
      s::Schedule h = s::read_schedule_json(in, path + " (GlobalMetadata " + kHeader + ")");
      h.programs.clear(); // the header's one empty program: the files hold the real ones
      h.program_of_rank.clear();
      return h;
    } catch (const s::ScheduleError& e) {
      throw ChakraError(e.what());
    }
  }
  if (!base)
    throw ChakraError(path + ": no GlobalMetadata \"" + kHeader +
                      "\" (not written by twinscale): give the job whose layout the ranks follow (--job or --preset)");
  s::Schedule h = *base;
  h.programs.clear();
  h.program_of_rank.clear();
  return h;
}

} // namespace

std::vector<std::string> chakra_set_paths(const std::string& prefix) {
  std::vector<std::string> paths;
  for (int64_t r = 0;; ++r) {
    const std::string p = chakra_file_name(prefix, r);
    if (!std::filesystem::exists(p)) break;
    paths.push_back(p);
  }
  if (paths.empty())
    throw ChakraError(chakra_file_name(prefix, 0) + ": no such file (a Chakra ET set is PREFIX.0.et, PREFIX.1.et, …)");
  return paths;
}

s::Schedule import_chakra(const std::vector<std::string>& paths, const std::vector<std::string>& bytes,
                          const std::optional<s::Schedule>& base, ChakraImportReport* report) {
  TWINSCALE_ASSERT(paths.size() == bytes.size(), "one path per file");
  return import_chakra(
      paths, [&bytes](size_t r) { return bytes[r]; }, base, report);
}

s::Schedule import_chakra(const std::vector<std::string>& paths, const std::function<std::string(size_t)>& read,
                          const std::optional<s::Schedule>& base, ChakraImportReport* report) {
  TWINSCALE_ASSERT(!paths.empty(), "at least one file");
  ChakraImportReport local;
  ChakraImportReport& out = report != nullptr ? *report : local;
  EtFile f = parse(paths[0], read(0));
  s::Schedule sch = header_of(paths[0], f, base);
  const int64_t world = static_cast<int64_t>(paths.size());
  if (sch.world() != world)
    throw ChakraError(paths[0] + ": the set has " + std::to_string(world) + " file(s) but the layout (tp " +
                      std::to_string(sch.layout.tp) + ", dp " + std::to_string(sch.layout.dp) + ", pp " +
                      std::to_string(sch.layout.pp) + ") has " + std::to_string(sch.world()) + " ranks");
  Names names(sch.names);
  std::unordered_map<std::string, uint32_t> shared;
  for (int64_t r = 0; r < world; ++r) {
    const std::string& path = paths[static_cast<size_t>(r)];
    if (r > 0) f = parse(path, read(static_cast<size_t>(r))); // one file in memory at a time
    for (const char* key : {kRank, kWorld})
      if (const auto* a = find_attr(f.meta.attr(), key)) {
        const auto v = int_value(*a);
        const int64_t want = key == kRank ? r : world;
        if (!v || *v != want)
          throw ChakraError(path + ": GlobalMetadata " + key + " is " + (v ? std::to_string(*v) : "not an integer") +
                            "; expected " + std::to_string(want) + " (files of different sets mixed?)");
      }
    s::Program prog = program_of(path, f, sch.layout, r, names, out);
    const auto [it, fresh] = shared.emplace(program_key(prog), static_cast<uint32_t>(sch.programs.size()));
    if (fresh) sch.programs.push_back(std::move(prog));
    sch.program_of_rank.push_back(it->second);
  }
  return sch;
}

} // namespace twinscale::formats
