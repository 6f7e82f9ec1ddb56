// MLCommons Chakra execution traces (ET): a schedule written as one Chakra ET file per
// rank, and a set of Chakra ET files read back into a schedule that both executors run.
// The messages are those of formats/et_def.proto (Chakra's schema); a file is Chakra's
// stream: varint length + GlobalMetadata, then varint length + Node per op.
//
// Export: op i of rank r becomes node i of `<prefix>.<r>.et`:
//   - type COMP_NODE (attrs num_ops = FLOPs, tensor_size = HBM bytes), COMM_COLL_NODE
//     (comm_type, comm_size = payload bytes, pg_name = "tp" | "dp" | "pp" | "embedding" |
//     "world"), COMM_SEND_NODE (comm_dst) or COMM_RECV_NODE (comm_src), peers as global
//     ranks, as Chakra's consumers expect;
//   - data_deps = the op's dependencies, ctrl_deps = the previous op on its stream (the
//     order twinscale's streams imply, made explicit for consumers without streams);
//   - "ts.*" attrs keep what Chakra has no field for (kind, kernel, stream, dtype,
//     priority, exact FLOPs/bytes, shape, labels), and the GlobalMetadata keeps the job,
//     layout and memory estimate ("ts.schedule_header"), so that import gives back the
//     same schedule (see schedules_equal).
//
// Import: nodes without "ts.*" attrs (an ET from another tool) map by their Chakra fields:
// COMP_NODE → a compute op of num_ops FLOPs and tensor_size bytes; COMM_COLL_NODE →
// the collective of comm_type on group pg_name (default "world"); COMM_SEND/RECV_NODE →
// a pipeline Send/Recv to/from global rank comm_dst/comm_src. Nodes run in file order
// (dependencies must point to nodes earlier in the file). Without a "ts.schedule_header"
// the caller supplies the job (its layout must have as many ranks as there are files).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "schedules/schedule.hpp"

namespace twinscale::formats {

/// An ET file that cannot be read or does not follow the schema; names the file and node.
class ChakraError : public Error {
public:
  explicit ChakraError(const std::string& what) : Error(what) {}
};

/// Version written in GlobalMetadata.version (the Chakra schema release followed).
inline constexpr const char* kChakraSchemaVersion = "0.0.4";

/// Writes the ET files of one schedule, one rank at a time (a 12,288-rank schedule's
/// files do not fit in memory together).
class ChakraExporter {
public:
  explicit ChakraExporter(const schedules::Schedule& schedule);
  /// The bytes of `<prefix>.<rank>.et`.
  std::string file(int64_t rank) const;
  /// The bytes of the whole set, from one file per distinct program (a rank's file
  /// differs from another of the same program only by a few bytes of rank numbers).
  double estimated_set_bytes() const;

private:
  const schedules::Schedule& schedule_;
  std::string header_; // in rank 0's file
};

/// The ET file of every rank, in rank order (bytes of `<prefix>.<rank>.et`); for small
/// schedules (tests): every file is held in memory.
std::vector<std::string> export_chakra(const schedules::Schedule& schedule);

/// `<prefix>.<rank>.et` for rank = 0, 1, … (the files of a set).
std::string chakra_file_name(const std::string& prefix, int64_t rank);

/// The schedule of a set of ET files, given their paths in rank order and their bytes.
/// `base` supplies job, layout, memory estimate and model FLOPs when the files carry no
/// "ts.schedule_header" (it is ignored when they do). The result is deduplicated (ranks
/// with equal programs share one) but not validated: run schedules::validate on it.
schedules::Schedule import_chakra(const std::vector<std::string>& paths, const std::vector<std::string>& bytes,
                                  const std::optional<schedules::Schedule>& base);
/// The same, reading file r's bytes with read(r) when it gets there: one file in memory
/// at a time.
schedules::Schedule import_chakra(const std::vector<std::string>& paths, const std::function<std::string(size_t)>& read,
                                  const std::optional<schedules::Schedule>& base);

/// The files of the set `prefix` (`<prefix>.0.et`, `<prefix>.1.et`, … up to the first
/// missing rank), read whole; ChakraError when there is none.
std::vector<std::string> chakra_set_paths(const std::string& prefix);

/// Whether two schedules are equal as programs to run: same layout and job, and for
/// every rank the same ops in the same order, each with equal kind, kernel, stream,
/// dtype, group, priority, peer, FLOPs, bytes, shape, labels, name (as text) and
/// dependencies (in order); plus equal memory estimates and model FLOPs. How ranks share
/// programs and how names are numbered do not matter. On a difference, `why` says where.
bool schedules_equal(const schedules::Schedule& a, const schedules::Schedule& b, std::string* why = nullptr);

} // namespace twinscale::formats
