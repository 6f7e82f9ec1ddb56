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
//     same schedule (see schedules::schedules_equal, schedules/schedule_equal.hpp).
//
// Import: nodes without "ts.*" attrs (an ET from another tool) map by their Chakra fields:
// COMP_NODE → a compute op of num_ops FLOPs and tensor_size bytes; COMM_COLL_NODE →
// the collective of comm_type on group pg_name (a twinscale group name, or a PyTorch
// process group that a METADATA node "process_group:init" defines; default "world");
// COMM_SEND/RECV_NODE → a pipeline Send/Recv to/from global rank comm_dst/comm_src.
// METADATA, MEM_LOAD/MEM_STORE and host (is_cpu_op) nodes are skipped, counted in the
// report; a dependency on a skipped node becomes a dependency on what it depended on.
// duration_micros is kept in the report (see calibration_of_durations). Nodes run in file
// order (dependencies must point to nodes earlier in the file). Without a
// "ts.schedule_header" the caller supplies the job (its layout must have as many ranks as
// there are files).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "schedules/calibration.hpp"
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

/// What an import skipped and what it measured (PyTorch execution traces converted by
/// Chakra's tools carry host operators, metadata and memory nodes, and durations).
struct ChakraImportReport {
  int64_t metadata_nodes = 0; // METADATA_NODE: skipped (process-group definitions are read from them)
  int64_t memory_nodes = 0;   // MEM_LOAD_NODE / MEM_STORE_NODE: skipped
  double memory_bytes = 0;    // their tensor_size, summed
  int64_t host_nodes = 0;     // COMP_NODEs with is_cpu_op = true: skipped
  /// Ops whose node carries duration_micros > 0: rank, op index, seconds.
  struct Timed {
    int64_t rank = 0;
    uint32_t op = 0;
    double seconds = 0;
  };
  std::vector<Timed> durations;
  /// Process groups named by PyTorch (pg_name "0", "3" …) and the twinscale group each
  /// was found to be, from the ranks a METADATA node "process_group:init" gives it.
  std::map<std::string, std::string> process_groups;
};

/// The calibration table of an import's measured durations (ChakraImportReport::durations):
/// compute ops as kernel entries (kernel, dtype, shape, op name: the median over the nodes
/// of one name and shape), collectives and sends as communication entries (kind, group
/// size, bytes). Source "chakra", device `device`.
schedules::CalibrationTable calibration_of_durations(const schedules::Schedule& schedule,
                                                     const ChakraImportReport& report, const std::string& device);

/// The schedule of a set of ET files, given their paths in rank order and their bytes.
/// `base` supplies job, layout, memory estimate and model FLOPs when the files carry no
/// "ts.schedule_header" (it is ignored when they do). The result is deduplicated (ranks
/// with equal programs share one) but not validated: run schedules::validate on it.
schedules::Schedule import_chakra(const std::vector<std::string>& paths, const std::vector<std::string>& bytes,
                                  const std::optional<schedules::Schedule>& base, ChakraImportReport* report = nullptr);
/// The same, reading file r's bytes with read(r) when it gets there: one file in memory
/// at a time.
schedules::Schedule import_chakra(const std::vector<std::string>& paths, const std::function<std::string(size_t)>& read,
                                  const std::optional<schedules::Schedule>& base, ChakraImportReport* report = nullptr);

/// The files of the set `prefix` (`<prefix>.0.et`, `<prefix>.1.et`, … up to the first
/// missing rank), read whole; ChakraError when there is none.
std::vector<std::string> chakra_set_paths(const std::string& prefix);

} // namespace twinscale::formats
