// Attribute names and small helpers shared by the Chakra exporter and importer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "formats/et_def.pb.h"
#include "schedules/op.hpp"

namespace twinscale::formats::detail {

// GlobalMetadata attrs
inline constexpr const char* kSchema = "ts.schema";
inline constexpr const char* kSchemaName = "twinscale-schedule-chakra 1";
inline constexpr const char* kRank = "ts.rank";
inline constexpr const char* kWorld = "ts.world";
inline constexpr const char* kHeader = "ts.schedule_header"; // rank 0 only
// Node attrs (besides Chakra's own num_ops, tensor_size, comm_type, comm_size, pg_name,
// comm_src, comm_dst, is_cpu_op)
inline constexpr const char* kKind = "ts.kind";
inline constexpr const char* kKernel = "ts.kernel";
inline constexpr const char* kStream = "ts.stream";
inline constexpr const char* kDtype = "ts.dtype";
inline constexpr const char* kGroup = "ts.group";
inline constexpr const char* kPriority = "ts.priority";
inline constexpr const char* kPeer = "ts.peer";
inline constexpr const char* kFlops = "ts.flops";
inline constexpr const char* kBytes = "ts.bytes";
inline constexpr const char* kShape = "ts.shape";
inline constexpr const char* kIteration = "ts.iteration";
inline constexpr const char* kMicroBatch = "ts.micro_batch";
inline constexpr const char* kChunk = "ts.chunk";
inline constexpr const char* kLayer = "ts.layer";
inline constexpr const char* kPhase = "ts.phase";

inline ChakraProtoMsg::AttributeProto* add(ChakraProtoMsg::Node& n, const char* name) {
  auto* a = n.add_attr();
  a->set_name(name);
  return a;
}
inline void add_bool(ChakraProtoMsg::Node& n, const char* name, bool v) { add(n, name)->set_bool_val(v); }
inline void add_int32(ChakraProtoMsg::Node& n, const char* name, int32_t v) { add(n, name)->set_int32_val(v); }
inline void add_int64(ChakraProtoMsg::Node& n, const char* name, int64_t v) { add(n, name)->set_int64_val(v); }
inline void add_uint64(ChakraProtoMsg::Node& n, const char* name, uint64_t v) { add(n, name)->set_uint64_val(v); }
inline void add_double(ChakraProtoMsg::Node& n, const char* name, double v) { add(n, name)->set_double_val(v); }
inline void add_string(ChakraProtoMsg::Node& n, const char* name, const std::string& v) {
  add(n, name)->set_string_val(v);
}

/// Chakra's CollectiveCommType of a twinscale collective.
inline int64_t comm_type_of(schedules::OpKind k) {
  using K = schedules::OpKind;
  switch (k) {
  case K::AllGather: return ChakraProtoMsg::ALL_GATHER;
  case K::ReduceScatter: return ChakraProtoMsg::REDUCE_SCATTER;
  case K::AllReduce: return ChakraProtoMsg::ALL_REDUCE;
  case K::AllToAll: return ChakraProtoMsg::ALL_TO_ALL;
  case K::Broadcast: return ChakraProtoMsg::BROADCAST;
  default: return ChakraProtoMsg::ALL_REDUCE; // not a collective: not called
  }
}

/// The twinscale collective of a CollectiveCommType; nullopt for those twinscale has not.
inline std::optional<schedules::OpKind> op_kind_of_comm_type(int64_t t) {
  using K = schedules::OpKind;
  switch (t) {
  case ChakraProtoMsg::ALL_GATHER: return K::AllGather;
  case ChakraProtoMsg::REDUCE_SCATTER: return K::ReduceScatter;
  case ChakraProtoMsg::ALL_REDUCE: return K::AllReduce;
  case ChakraProtoMsg::ALL_TO_ALL: return K::AllToAll;
  case ChakraProtoMsg::BROADCAST: return K::Broadcast;
  default: return std::nullopt;
  }
}

} // namespace twinscale::formats::detail
