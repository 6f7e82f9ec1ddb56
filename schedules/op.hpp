// One operation of a rank's program. Compute ops carry FLOPs, HBM bytes and a kernel
// shape; communication ops carry a group, a peer and payload bytes. Every op carries a
// stream, dependencies (inside its program), a priority and labels for traces.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "schedules/layout.hpp"

namespace twinscale::schedules {

enum class OpKind : uint8_t {
  // compute
  Gemm,
  Attention,   // the attention core (QKᵀ, softmax, ·V) as one op; kernel says how
  Elementwise, // norm, activation, dropout, residual add, softmax (memory-bound)
  OptimizerStep,
  // communication
  AllGather,
  ReduceScatter,
  AllReduce,
  AllToAll,
  Broadcast,
  Send,
  Recv,
};

/// The concrete kernel a compute op stands for (M7: fused and unfused forms differ).
enum class Kernel : uint8_t {
  None, // communication ops
  Gemm,
  AttentionUnfused, // GEMM + softmax + GEMM, materialising the s×s scores
  FlashAttention2,
  LayerNorm, // unfused: several passes over the activation
  FusedLayerNorm,
  Gelu, // unfused bias-add + GeLU
  FusedBiasGelu,
  Dropout,
  ResidualAdd,
  AdamStep,
  LambStep,
  Embedding,      // embedding lookup / its gradient scatter
  CrossEntropy,   // vocabulary-parallel loss
  DataLoad,       // host → device copy of a batch (Phase::Data; bytes = batch bytes)
  RmsNorm,        // RMSNorm (no mean, no bias); fused or one pass of the unfused form
  MoeRouting,     // router softmax + top-k; shape {tokens·experts, experts, top_k, 0}
  MoePermute,     // rows gathered into (or scattered back from) expert order
  Fp8Cast,        // FP8 GEMMs (Transformer Engine delayed scaling): a tensor's amax, scaled cast
                  // to FP8 and its transpose; also the per-region amax-history/scale update
  Rope,           // rotary position embedding of queries and keys (fused, or one eager pass)
  Copy,           // a framework's memory copy (FSDP2's all-gather copy-out): read and write
  CudnnAttention, // cuDNN's fused attention (Transformer Engine's FusedAttention); shape as
                  // FlashAttention2's
};
/// The last Kernel (bounds of readers and per-kernel tables).
inline constexpr Kernel kLastKernel = Kernel::CudnnAttention;

enum class Stream : uint8_t {
  Compute = 0,
  TpComm = 1,
  DpComm = 2,
  PpSend = 3,
  PpRecv = 4,
  Data = 5,   // asynchronous data loading (M8)
  CpSend = 6, // context-parallel ring (K/V blocks and their gradients)
  CpRecv = 7,
};
inline constexpr int kStreamCount = 8;

enum class Phase : uint8_t { Forward, Backward, Optimizer, Recompute, Data };

/// FP8: a GEMM whose inputs are FP8 (E4M3 forward, E5M2 gradients, Transformer Engine's
/// hybrid format) running at the GPU's FP8 tensor rate; its output is BF16.
enum class DType : uint8_t { BF16, FP32, FP8 };

/// Labels that say where an op sits in the iteration (for traces, comparison, heat-maps).
/// -1 means "not applicable".
struct OpLabels {
  int32_t iteration = 0;
  int32_t micro_batch = -1;
  int32_t chunk = -1; // model chunk (virtual stage) on this pipeline rank
  int32_t layer = -1; // global layer index
  Phase phase = Phase::Forward;
};

struct Op {
  OpKind kind = OpKind::Gemm;
  Kernel kernel = Kernel::None;
  Stream stream = Stream::Compute;
  DType dtype = DType::BF16;
  GroupKind group = GroupKind::World; // communication ops only
  int32_t priority = 0;               // higher runs first when streams compete
  int32_t peer = -1;                  // Send/Recv: the peer's rank inside `group`
  uint32_t dep_begin = 0;             // range in Program::deps
  uint32_t dep_count = 0;
  double flops = 0; // compute: floating-point operations
  double bytes = 0; // compute: HBM bytes moved; comm: payload bytes
                    // (all-gather/reduce-scatter: the full gathered size)
  /// Kernel shape. Gemm: {m, n, k, 0}. Attention: {batch·heads, seq, head_dim, window
  /// (0 = dense)}. Elementwise/optimizer: {elements, 0, 0, 0}.
  std::array<int64_t, 4> shape{0, 0, 0, 0};
  OpLabels labels;
  uint32_t name = 0; // index in Schedule::names (e.g. "attn.qkv")

  bool is_communication() const { return kind >= OpKind::AllGather; }
  bool is_collective() const { return is_communication() && kind != OpKind::Send && kind != OpKind::Recv; }
};

std::string_view to_string(OpKind);
std::string_view to_string(Kernel);
std::string_view to_string(Stream);
std::string_view to_string(Phase);
std::string_view to_string(GroupKind);
std::string_view to_string(DType);

/// Inverses of to_string (for schedule and trace files); std::nullopt when unknown.
std::optional<OpKind> op_kind_from_string(std::string_view);
std::optional<Kernel> kernel_from_string(std::string_view);
std::optional<Stream> stream_from_string(std::string_view);
std::optional<Phase> phase_from_string(std::string_view);
std::optional<GroupKind> group_kind_from_string(std::string_view);
std::optional<DType> dtype_from_string(std::string_view);

} // namespace twinscale::schedules
