// Schedule → Chakra ET files (formats/chakra.hpp).
#include <sstream>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "formats/chakra.hpp"
#include "formats/detail/chakra_attrs.hpp"
#include "formats/et_def.pb.h"
#include "schedules/schedule_json.hpp"

namespace twinscale::formats {

namespace {
namespace s = twinscale::schedules;
namespace pb = ChakraProtoMsg;
using namespace detail;

/// The schedule without its programs: job, layout, names, memory and model FLOPs, as a
/// schedule JSON with one empty program shared by every rank.
std::string schedule_header(const s::Schedule& schedule) {
  s::Schedule h;
  h.version = schedule.version;
  h.job = schedule.job;
  h.layout = schedule.layout;
  h.programs.emplace_back();
  h.program_of_rank.assign(static_cast<size_t>(schedule.world()), 0);
  h.names = schedule.names;
  h.memory_by_stage = schedule.memory_by_stage;
  h.model_flops_per_iteration = schedule.model_flops_per_iteration;
  std::ostringstream os;
  s::write_schedule_json(h, os);
  return os.str();
}

pb::Node node_of(const s::Schedule& schedule, int64_t rank, const s::Program& prog, size_t i,
                 const std::vector<int64_t>& stream_prev) {
  const s::Op& op = prog.ops[i];
  pb::Node n;
  n.set_id(i);
  n.set_name(op.name < schedule.names.size() ? schedule.names[op.name] : std::string());
  for (uint32_t d : prog.deps_of(op)) n.add_data_deps(d);
  // the previous op on this stream: implied by twinscale's streams, explicit for Chakra
  const int64_t prev = stream_prev[i];
  bool in_data = false;
  for (uint32_t d : prog.deps_of(op)) in_data = in_data || static_cast<int64_t>(d) == prev;
  if (prev >= 0 && !in_data) n.add_ctrl_deps(static_cast<uint64_t>(prev));

  add_bool(n, "is_cpu_op", false);
  if (!op.is_communication()) {
    n.set_type(pb::COMP_NODE);
    add_int64(n, "num_ops", static_cast<int64_t>(op.flops));
    add_uint64(n, "tensor_size", static_cast<uint64_t>(op.bytes));
  } else if (op.is_collective()) {
    n.set_type(pb::COMM_COLL_NODE);
    add_int64(n, "comm_type", comm_type_of(op.kind));
    add_int64(n, "comm_size", static_cast<int64_t>(op.bytes));
    add_string(n, "pg_name", std::string(s::to_string(op.group)));
  } else {
    const auto members = schedule.layout.group_members(op.group, rank);
    const int64_t peer = op.peer >= 0 && op.peer < static_cast<int32_t>(members.size()) ? members[op.peer] : -1;
    n.set_type(op.kind == s::OpKind::Send ? pb::COMM_SEND_NODE : pb::COMM_RECV_NODE);
    add_int32(n, op.kind == s::OpKind::Send ? "comm_dst" : "comm_src", static_cast<int32_t>(peer));
    add_int64(n, "comm_size", static_cast<int64_t>(op.bytes));
    add_string(n, "pg_name", std::string(s::to_string(op.group)));
  }
  // what Chakra has no field for, exactly
  add_string(n, kKind, std::string(s::to_string(op.kind)));
  add_string(n, kKernel, std::string(s::to_string(op.kernel)));
  add_string(n, kStream, std::string(s::to_string(op.stream)));
  add_string(n, kDtype, std::string(s::to_string(op.dtype)));
  add_string(n, kGroup, std::string(s::to_string(op.group)));
  add_int32(n, kPriority, op.priority);
  add_int32(n, kPeer, op.peer);
  add_double(n, kFlops, op.flops);
  add_double(n, kBytes, op.bytes);
  auto* shape = n.add_attr();
  shape->set_name(kShape);
  for (int64_t v : op.shape) shape->mutable_int64_list()->add_values(v);
  add_int32(n, kIteration, op.labels.iteration);
  add_int32(n, kMicroBatch, op.labels.micro_batch);
  add_int32(n, kChunk, op.labels.chunk);
  add_int32(n, kLayer, op.labels.layer);
  add_string(n, kPhase, std::string(s::to_string(op.labels.phase)));
  return n;
}

void put(google::protobuf::io::CodedOutputStream& out, const google::protobuf::MessageLite& m) {
  out.WriteVarint32(static_cast<uint32_t>(m.ByteSizeLong()));
  m.SerializeWithCachedSizes(&out);
}

} // namespace

std::string chakra_file_name(const std::string& prefix, int64_t rank) {
  return prefix + "." + std::to_string(rank) + ".et";
}

ChakraExporter::ChakraExporter(const s::Schedule& schedule) : schedule_(schedule), header_(schedule_header(schedule)) {}

std::string ChakraExporter::file(int64_t rank) const {
  const s::Schedule& schedule = schedule_;
  const s::Program& prog = schedule.program(rank);
  pb::GlobalMetadata meta;
  meta.set_version(kChakraSchemaVersion);
  auto attr = [&meta](const std::string& name) {
    auto* a = meta.add_attr();
    a->set_name(name);
    return a;
  };
  attr(kSchema)->set_string_val(kSchemaName);
  attr(kRank)->set_int64_val(rank);
  attr(kWorld)->set_int64_val(schedule.world());
  if (rank == 0) attr(kHeader)->set_string_val(header_); // once per set: it holds every rank's program index
  std::vector<int64_t> stream_prev(prog.ops.size(), -1);
  std::array<int64_t, s::kStreamCount> last;
  last.fill(-1);
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    auto& l = last[static_cast<size_t>(prog.ops[i].stream)];
    stream_prev[i] = l;
    l = static_cast<int64_t>(i);
  }
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream sos(&bytes);
    google::protobuf::io::CodedOutputStream out(&sos);
    put(out, meta);
    for (size_t i = 0; i < prog.ops.size(); ++i) put(out, node_of(schedule, rank, prog, i, stream_prev));
  }
  return bytes;
}

double ChakraExporter::estimated_set_bytes() const {
  // per program: one rank other than 0 (rank 0's file also holds the header), and how many use it
  const size_t programs = schedule_.programs.size();
  std::vector<int64_t> sample(programs, -1), count(programs, 0);
  for (int64_t r = 0; r < schedule_.world(); ++r) {
    const uint32_t p = schedule_.program_of_rank[static_cast<size_t>(r)];
    if (sample[p] <= 0) sample[p] = r;
    ++count[p];
  }
  double total = static_cast<double>(header_.size());
  for (size_t p = 0; p < programs; ++p)
    if (count[p] > 0) total += static_cast<double>(file(sample[p]).size()) * static_cast<double>(count[p]);
  return total;
}

std::vector<std::string> export_chakra(const s::Schedule& schedule) {
  const ChakraExporter exporter(schedule);
  std::vector<std::string> files;
  for (int64_t rank = 0; rank < schedule.world(); ++rank) files.push_back(exporter.file(rank));
  return files;
}

} // namespace twinscale::formats
