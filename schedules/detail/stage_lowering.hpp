// Private: lowers the program of one pipeline rank (shared by all its tp × dp ranks; with
// context parallelism one program per (pipeline rank, cp rank): the ring peers differ).
#pragma once

#include <cstdint>
#include <map>
#include <tuple>
#include <vector>

#include "schedules/detail/builder.hpp"
#include "schedules/detail/layer_ops.hpp"
#include "schedules/pipeline.hpp"
#include "schedules/stage_layers.hpp"

namespace twinscale::schedules::detail {

/// A point-to-point message between neighbouring pipeline ranks.
struct PpMessage {
  int64_t iteration = 0;
  bool forward = true; // activation (forward) or gradient (backward)
  int64_t micro_batch = 0;
  int64_t chunk = 0; // the receiver's model chunk that consumes it
  auto key() const { return std::make_tuple(iteration, forward, micro_batch, chunk); }
};

/// Messages that pipeline rank `src` sends to `dst`, in the order it sends them.
std::vector<PpMessage> pp_messages(const JobSpec& job, int64_t src, int64_t dst);

class StageLowering {
public:
  /// `replay_layers`: LayerEmitter::set_replay (the same program either way).
  StageLowering(const JobSpec& job, int64_t pp_rank, int64_t cp_rank, NameTable& names, bool replay_layers = true);
  /// The stage's program. `sibling`, when given, is a program of another stage of the
  /// same job: its sizes (stages differ by a few ops) bound the vectors reserved up front.
  Program run(const Program* sibling = nullptr);
  /// Layer passes that run() copied rather than emitted (LayerEmitter::replayed_passes).
  size_t replayed_passes() const { return layers_.replayed_passes(); }

private:
  void emit_step(size_t step_index);
  void emit_iteration_end();
  void emit_data_op(int64_t for_iteration, bool async);
  void emit_grad_reduce(int64_t chunk);
  /// The DP (or expert-DP) reduction of `params` gradients after `deps`: all-reduce
  /// (ZeRO 0) or reduce-scatter, in the reduction's dtype; the optimizer waits for it.
  void reduce_gradients(GroupKind group, double params, const std::vector<uint32_t>& deps);
  void emit_input_broadcast();
  void emit_grad_norm_and_loss(double elements);
  /// All-gather of a chunk's parameters (ZeRO): the dense ones over DP, the routed
  /// experts' over the expert data-parallel group (into expert_param_ready_).
  uint32_t gather_parameters(int64_t chunk, std::vector<uint32_t> deps, int32_t priority, double dense = -1);
  /// ZeRO-1 with overlap.dp (Megatron-Core's overlap_param_gather): the previous step's
  /// parameters all-gathered bucket by bucket at the start of the iteration, in forward
  /// order; a chunk's first forward waits for its first bucket (param_ready_), a layer's
  /// for the bucket that starts at it (bucket_gather_).
  bool zero1_overlapped_gather() const;
  void gather_buckets();     // plans the iteration's buckets and launches the first
  void launch_next_bucket(); // at a bucket's pre-hook: the next one's all-gather
  struct GatherBucket {      // a DP bucket: its lowest layer and its parameters
    int64_t chunk;
    int64_t first_layer; // −1: the chunk's first gather bucket (param_ready_)
    double params;
  };
  std::vector<GatherBucket> buckets_; // forward order, all chunks
  size_t next_bucket_ = 0;
  /// The layers of one pass (forward, or backward with recomputation), with ZeRO-3's
  /// per-layer parameter all-gathers and gradient reduce-scatters (fsdp.cpp).
  void emit_layers(LayerRange layers, bool forward);
  std::vector<uint32_t> fsdp_gather_layer(int64_t layer, int32_t priority);
  void fsdp_reduce_layer(int64_t layer);
  void fsdp_copy_out(int64_t layer);          // FSDP2's copy of a gathered layer into its parameters
  void fsdp_grad_reduce_input(int64_t layer); // FSDP2's copy-in and pre-divide of a layer's gradients
  /// A chunk's parameters outside its layers (embedding, LM head, final norm).
  double chunk_other_parameters(int64_t chunk) const;
  void emit_embedding_allreduce();
  // Posts the receives from `src` up to `message` (in the sender's order) and returns the
  // op after which `message` is usable: its receive, or with pp_scatter_gather its TP
  // all-gather, which is emitted only when `needed` (a receive posted ahead of the pass
  // that needs it must not put its gather on the TP stream before the current pass's own
  // TP collectives).
  uint32_t ensure_recv(int64_t src, const PpMessage& message, bool needed = true);
  /// The message the step needs from a neighbour, if any (src = −1 when none).
  std::pair<int64_t, PpMessage> needed_message(const PipelineStep& step) const;
  bool has_embedding_chunk(int64_t chunk) const;

  const JobSpec& job_;
  int64_t pp_rank_;
  int64_t P_, V_, M_;
  int64_t iteration_ = 0;
  double act_bytes_; // one pipeline message
  ProgramBuilder b_;
  LayerEmitter layers_;
  std::vector<PipelineStep> order_;
  std::vector<size_t> first_forward_; // step index per chunk
  std::vector<size_t> last_backward_; // step index per chunk

  // receives: per source rank, messages in the sender's order and the ops emitted so far
  std::map<int64_t, std::vector<PpMessage>> incoming_;
  std::map<int64_t, std::map<std::tuple<int64_t, bool, int64_t, int64_t>, size_t>> incoming_pos_;
  std::map<int64_t, std::vector<uint32_t>> recv_ops_;
  std::map<int64_t, std::map<size_t, uint32_t>> gathered_; // scatter/gather: message index → all-gather

  std::vector<uint32_t> unfinished_sends_; // coupled PP: next compute waits for these
  // Megatron's interleaved exchange (megatron_exchange.hpp): a steady-state forward's
  // output is sent after the following backward, with its gradient; what an exchange
  // receives is waited for before the next compute.
  bool deferred_activation_ = false;
  OpLabels deferred_labels_;
  std::vector<uint32_t> exchange_recvs_;
  uint32_t post_next_recv(int64_t src);       // the next message from src, in the sender's order
  std::vector<uint32_t> param_ready_;         // per chunk: the all-gather its forward needs
  std::vector<uint32_t> expert_param_ready_;  // per chunk: the experts' all-gather (or kNoOp)
  std::map<int64_t, uint32_t> bucket_gather_; // first layer of a gathered bucket → its all-gather
  std::vector<int64_t> deferred_reduce_;      // chunks whose DP reduction waits for the flush
  std::vector<uint32_t> grad_reduced_;        // reduce-scatters/all-reduces the optimizer needs
  uint32_t embedding_ar_ = kNoOp;
  // DP gradient buckets (schedule.dp_bucket_params): during a chunk's last backward the
  // layers' gradients fill buckets, each reduced once full; the rest at the chunk's end.
  bool bucketing_ = false;                              // the pass being emitted is its chunk's last backward
  std::vector<std::vector<GatherBucket>> grad_buckets_; // per chunk: dense_buckets (the gathers' too)
  std::vector<double> bucketed_;                        // per chunk: parameters already reduced in buckets
  std::vector<GatherBucket> dense_buckets(int64_t chunk) const;
  void add_to_bucket(int64_t chunk, int64_t layer);
  uint32_t previous_optimizer_ = kNoOp;
  uint32_t next_data_ = kNoOp; // async data op for the coming iteration
};

} // namespace twinscale::schedules::detail
