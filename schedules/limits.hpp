// Upper bounds on sizes read from input, each with the reason it exists, and checked
// integer arithmetic for every size derived from input (layout products, shapes, byte and
// op counts). A bound is not a statement about what real clusters can do: it keeps every
// derived size representable (op indices are 32-bit, shapes and counts 64-bit) and keeps
// a typo ("4294967296" for "4096") from being taken at face value.
#pragma once

#include <cstdint>
#include <string>

namespace twinscale::schedules {

/// Ranks of one layout (tp·dp·pp): 2^20 = 1,048,576, 8× the largest cluster this project
/// models (131,072 GPUs); rank ids must also fit the trace's and MPI's 32-bit ranks.
inline constexpr int64_t kMaxRanks = int64_t{1} << 20;
/// Transformer layers: the largest published dense models have ≤ 200; 10,000 keeps
/// layer × micro-batch op counts far below 2^32 (op indices are 32-bit).
inline constexpr int64_t kMaxLayers = 10'000;
/// A DP gradient bucket: 2^40 parameters (more than any model's).
inline constexpr int64_t kMaxDpBucketParams = int64_t{1} << 40;
/// hidden and heads: 2^20 (GPT-530B has hidden 20,480); shapes hidden² stay < 2^41.
inline constexpr int64_t kMaxHidden = int64_t{1} << 20;
/// MLP inner size: 2^22 (4·kMaxHidden).
inline constexpr int64_t kMaxFfnHidden = int64_t{1} << 22;
/// Sequence length and vocabulary: 2^24 tokens (16.7 M; today's longest contexts are 2^20).
inline constexpr int64_t kMaxSeqLen = int64_t{1} << 24;
inline constexpr int64_t kMaxVocab = int64_t{1} << 24;
/// Sequences per micro-batch and per iteration.
inline constexpr int64_t kMaxMicroBatch = int64_t{1} << 20;
inline constexpr int64_t kMaxGlobalBatch = int64_t{1} << 24;
/// Tokens of one micro-batch (micro_batch·seq_len): 2^31, the largest GEMM dimension
/// cuBLAS takes as a 32-bit int.
inline constexpr int64_t kMaxMicroBatchTokens = int64_t{1} << 31;
/// One dimension of a GEMM's or an attention's shape: 2^31, the largest a cuBLAS or Eigen
/// kernel takes as a 32-bit int; it also keeps every product of two dimensions (a GEMM
/// operand m·k, an attention score matrix s·s) below 2^62, so no buffer size derived from
/// a shape wraps.
inline constexpr int64_t kMaxShapeDim = int64_t{1} << 31;
/// The length of any other kernel's vector (an elementwise pass or an optimizer step over
/// a rank's parameters, 2.7·10^9 for GPT-175B at tp 8, pp 8): 2^40, the bound on
/// parameters; executors never multiply two of these dimensions.
inline constexpr int64_t kMaxVectorElements = int64_t{1} << 40;
/// The bound on each dimension of a kernel shape of `matrix_kernel` (GEMM, attention) or
/// other kind.
inline constexpr int64_t max_shape_dim(bool matrix_kernel) { return matrix_kernel ? kMaxShapeDim : kMaxVectorElements; }
/// Ops of one rank's program: op indices are uint32 in the IR, the trace and the executor.
inline constexpr int64_t kMaxOpsPerProgram = int64_t{1} << 31;
/// A GPU's compute speed factor (1 = its model's speed, 0.5 = twice as slow): in
/// [kMinGpuSpeedFactor, kMaxGpuSpeedFactor]. A GPU a million times slower or faster than
/// its model is a typo, and the bound keeps every op time finite and non-zero; the GPU
/// speed file's reader and the simulator check this one range.
inline constexpr double kMinGpuSpeedFactor = 1e-6;
inline constexpr double kMaxGpuSpeedFactor = 1e6;

/// a·b, or nullopt-like failure: returns false on int64 overflow (then `out` is unchanged).
inline bool checked_mul(int64_t a, int64_t b, int64_t& out) {
  int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) return false;
  out = r;
  return true;
}
inline bool checked_add(int64_t a, int64_t b, int64_t& out) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return false;
  out = r;
  return true;
}

/// a·b saturated at INT64_MAX for non-negative operands (for "is this over the bound?"
/// comparisons, where the exact value past the bound does not matter).
inline int64_t saturating_mul(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

/// Throws JobError("<what> = <value> is larger than <max> (<reason>)") when value > max.
void require_at_most(const std::string& what, int64_t value, int64_t max, const std::string& reason);

/// Checks a layout read from input: every size in [1, kMaxRanks] and tp·dp·pp ≤ kMaxRanks
/// (computed without overflow). Throws JobError naming `where`.
void check_layout_sizes(int64_t tp, int64_t dp, int64_t pp, const std::string& where);

} // namespace twinscale::schedules
