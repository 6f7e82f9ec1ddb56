// One pipeline rank's program: per iteration, the data load (M8), the pipeline passes in
// Megatron's order with their point-to-point transfers (M5), the data-parallel gradient
// and parameter collectives by ZeRO stage (M4), the tied-embedding gradient all-reduce,
// the gradient-norm and loss all-reduces and the optimizer step (M3); the TP broadcast
// of each micro-batch's inputs on the stages that load data.
//
// Point-to-point: a forward pass of virtual stage vs = chunk·P + rank receives its input
// from rank−1 (rank P−1 → rank 0 moves to the next chunk) unless vs = 0, and sends its
// output to rank+1 unless vs is the last; a backward pass mirrors that. Receives are
// emitted in the order the sender sends (the executors match a pair's sends and
// receives in order), each no later than the pass that needs it. overlap.pp = false is
// Megatron's coupled send_forward_recv_backward: the next computation waits for the
// previous sends and its receive. overlap.pp = true (M5) decouples them: sends are not
// waited for and the next pass's receive is posted one pass ahead.
//
// Data parallelism, per model chunk, on the DpComm stream (M4):
//  - zero_stage 0: all-reduce of the chunk's gradients; 1: reduce-scatter of gradients,
//    optimizer on the 1/dp shard, all-gather of the updated parameters after the step;
//    without overlap.dp all of these follow the pipeline flush and the computation waits
//    for them (exposed); with overlap.dp (Megatron's overlap_grad_reduce /
//    overlap_param_gather) each reduction starts when the chunk's last backward ends (or
//    its bucket fills) and the all-gathers move to the start of the next iteration,
//    bucket by bucket in forward order, each layer's first forward waiting for its own
//    (gather_buckets); the lowered iteration is the steady state's: it opens with the
//    gathers of the step before it.
//  - zero_stage 2 (MegaScale): all-gather of the chunk's parameters before its first
//    forward and reduce-scatter of its gradients after its last backward. Without
//    overlap.dp both block the computation. With it, chunk 0's all-gather is prefetched
//    at the start of the iteration, chunk c+1's is launched once chunk c's first forward
//    has run, reduce-scatters start as soon as a chunk's backward is final, and
//    priorities follow the order of need (all-gathers 2·V − chunk, reduce-scatters 1).
//  - zero_stage 3 (ZeRO-3/FSDP, fsdp.cpp): each layer's parameters all-gathered before
//    every pass that uses it and its gradients reduce-scattered after its backward; the
//    chunk's other parameters (embedding, head) as in stage 2.
//  - The tied-embedding gradient all-reduce (first and last stage) follows the pipeline
//    flush, as in Megatron's finalize_model_grads; the chunk holding the embedding or
//    LM head reduces its gradients after it (a deliberate loss of overlap for that one
//    chunk: launching it earlier would reduce a gradient that is not final yet).
#include "schedules/detail/stage_lowering.hpp"

#include <algorithm>
#include <optional>

#include "schedules/detail/megatron_exchange.hpp"
#include "schedules/error.hpp"
#include "schedules/memory.hpp"
#include "schedules/stage_layers.hpp"

namespace twinscale::schedules::detail {

namespace {

/// Megatron's blocking interleaved exchange is in effect (megatron_exchange.hpp).
bool megatron_exchange(const JobSpec& job) {
  return !job.options.overlap.pp && job.options.pipeline == PipelineKind::Interleaved && job.parallel.pp > 1;
}

} // namespace

std::vector<PpMessage> pp_messages(const JobSpec& job, int64_t src, int64_t dst) {
  const int64_t P = job.parallel.pp;
  const int64_t V = job.parallel.vpp;
  const int64_t M = job.parallel.micro_batches();
  const int64_t last = P * V - 1;
  const auto order = pipeline_order(job.options.pipeline, P, V, M, src);
  const bool exchange = megatron_exchange(job);
  std::vector<PpMessage> out;
  for (int64_t it = 0; it < job.options.iterations; ++it) {
    std::optional<PpMessage> held; // a steady-state forward's output, sent after its backward
    for (size_t j = 0; j < order.size(); ++j) {
      const auto& st = order[j];
      const int64_t vs = st.chunk * P + src;
      std::optional<PpMessage> activation;
      if (st.forward && vs < last && (src + 1) % P == dst)
        activation = PpMessage{it, true, st.micro_batch, src == P - 1 ? st.chunk + 1 : st.chunk};
      if (exchange && !megatron_exchange_after(P, V, M, src, static_cast<int64_t>(j)).after) {
        held = activation;
        continue;
      }
      // an exchange sends the held activation first (see emit_step), then the gradient
      if (held) out.push_back(*held);
      held.reset();
      if (activation) out.push_back(*activation);
      if (!st.forward && !st.weight && vs > 0 && (src - 1 + P) % P == dst)
        out.push_back({it, false, st.micro_batch, src == 0 ? st.chunk - 1 : st.chunk});
    }
  }
  return out;
}

StageLowering::StageLowering(const JobSpec& job, int64_t pp_rank, int64_t cp_rank, NameTable& names, bool replay_layers)
    : job_(job), pp_rank_(pp_rank), P_(job.parallel.pp), V_(job.parallel.vpp), M_(job.parallel.micro_batches()),
      b_(names), layers_(b_, job) {
  layers_.set_replay(replay_layers);
  layers_.set_cp_rank(cp_rank);
  layers_.set_split_backward(job.options.pipeline == PipelineKind::ZeroBubbleH1);
  const Dims d = Dims::of(job);
  act_bytes_ = static_cast<double>(d.tokens_local) * static_cast<double>(d.h) * 2;
  // SC'21 scatter/gather: the send carries 1/tp; an all-gather inside the TP group
  // (NVLink) rebuilds the activation on arrival (ensure_recv).
  if (job.parallel.pp_scatter_gather) act_bytes_ /= static_cast<double>(job.parallel.tp);
  order_ = pipeline_order(job.options.pipeline, P_, V_, M_, pp_rank_);
  first_forward_.assign(V_, SIZE_MAX);
  last_backward_.assign(V_, 0);
  for (size_t i = 0; i < order_.size(); ++i) {
    const auto& st = order_[i];
    if (st.forward && first_forward_[st.chunk] == SIZE_MAX) first_forward_[st.chunk] = i;
    if (!st.forward) last_backward_[st.chunk] = i;
  }
  if (P_ > 1) {
    for (int64_t src : {(pp_rank_ - 1 + P_) % P_, (pp_rank_ + 1) % P_}) {
      if (incoming_.count(src)) continue;
      incoming_[src] = pp_messages(job, src, pp_rank_);
      auto& pos = incoming_pos_[src];
      for (size_t i = 0; i < incoming_[src].size(); ++i) pos[incoming_[src][i].key()] = i;
    }
  }
  param_ready_.assign(V_, kNoOp);
  bucketed_.assign(V_, 0);
  for (int64_t c = 0; c < V_; ++c) grad_buckets_.push_back(dense_buckets(c));
  expert_param_ready_.assign(V_, kNoOp);
}

bool StageLowering::has_embedding_chunk(int64_t chunk) const {
  if (P_ * V_ == 1) return false;
  const int64_t vs = chunk * P_ + pp_rank_;
  return P_ > 1 && (vs == 0 || vs == P_ * V_ - 1);
}

std::pair<int64_t, PpMessage> StageLowering::needed_message(const PipelineStep& st) const {
  const int64_t vs = st.chunk * P_ + pp_rank_;
  if (st.forward && vs > 0) return {(pp_rank_ - 1 + P_) % P_, {iteration_, true, st.micro_batch, st.chunk}};
  if (!st.forward && !st.weight && vs < P_ * V_ - 1)
    return {(pp_rank_ + 1) % P_, {iteration_, false, st.micro_batch, st.chunk}};
  return {-1, {}};
}

uint32_t StageLowering::ensure_recv(int64_t src, const PpMessage& message, bool needed) {
  const auto& list = incoming_.at(src);
  const auto found = incoming_pos_.at(src).find(message.key());
  TWINSCALE_ASSERT(found != incoming_pos_.at(src).end(), "needed message is never sent");
  const size_t index = found->second;
  auto& ops = recv_ops_[src];
  const OpLabels saved = b_.labels;
  auto label = [&](const PpMessage& m) {
    b_.labels = OpLabels{static_cast<int32_t>(m.iteration), static_cast<int32_t>(m.micro_batch),
                         static_cast<int32_t>(m.chunk), -1, m.forward ? Phase::Forward : Phase::Backward};
  };
  auto& gathers = gathered_[src];
  auto gather = [&](size_t i) {
    const PpMessage& m = list[i];
    label(m);
    gathers.emplace(i, b_.collective(OpKind::AllGather, GroupKind::Tp, Stream::TpComm,
                                     m.forward ? "pp.gather.activation" : "pp.gather.gradient",
                                     act_bytes_ * static_cast<double>(job_.parallel.tp), {ops[i]}));
  };
  const bool scatter_gather = job_.parallel.pp_scatter_gather;
  while (ops.size() <= index) {
    const PpMessage& m = list[ops.size()];
    label(m);
    ops.push_back(b_.p2p(OpKind::Recv, static_cast<int32_t>(src), m.forward ? "pp.recv.activation" : "pp.recv.gradient",
                         act_bytes_, {}));
    if (scatter_gather && needed) gather(ops.size() - 1); // posted at need: rebuilt on arrival
  }
  uint32_t usable = ops[index];
  if (scatter_gather && needed) {
    if (!gathers.count(index)) gather(index); // posted ahead of its pass: rebuilt when needed
    usable = gathers.at(index);
  }
  b_.labels = saved;
  return usable;
}

uint32_t StageLowering::post_next_recv(int64_t src) {
  const auto& list = incoming_.at(src);
  const size_t next = recv_ops_[src].size();
  if (next >= list.size())
    throw ScheduleError("pipeline rank " + std::to_string(pp_rank_) +
                        ": Megatron's interleaved exchange receives a message rank " + std::to_string(src) +
                        " never sends (the exchange rules and the sender's order disagree)");
  return ensure_recv(src, list[next]);
}

void StageLowering::emit_data_op(int64_t for_iteration, bool async) {
  const bool first = pp_rank_ == 0;
  const bool last = pp_rank_ == P_ - 1;
  if (!first && !last) return; // only the first stage (tokens) and last (labels) load data
  const int64_t tokens = M_ * job_.parallel.micro_batch * job_.model.seq_len / job_.parallel.cp; // cp: its chunks
  const double bytes = static_cast<double>(tokens) * 8 * ((first ? 1 : 0) + (last ? 1 : 0));
  const OpLabels saved = b_.labels;
  b_.labels = OpLabels{static_cast<int32_t>(for_iteration), -1, -1, -1, Phase::Data};
  Op op;
  op.kind = OpKind::Elementwise;
  op.kernel = Kernel::DataLoad;
  op.stream = async ? Stream::Data : Stream::Compute;
  op.bytes = bytes;
  op.shape = {tokens, 0, 0, 0};
  const uint32_t id = b_.add(op, "data.load", {async ? b_.last_compute() : kNoOp});
  b_.labels = saved;
  if (async) next_data_ = id;
}

void StageLowering::emit_embedding_allreduce() {
  if (embedding_ar_ != kNoOp || job_.model.untied_embeddings) return; // untied: nothing shared
  const double bytes =
      static_cast<double>(job_.model.vocab / job_.parallel.tp) * static_cast<double>(job_.model.hidden) * 2;
  embedding_ar_ = b_.collective(OpKind::AllReduce, GroupKind::Embedding, Stream::DpComm, "embedding.grad.ar", bytes,
                                {b_.last_compute()});
  grad_reduced_.push_back(embedding_ar_);
}

void StageLowering::emit_grad_reduce(int64_t chunk) {
  const auto& par = job_.parallel;
  if (par.dp_cp() == 1) return;
  // ZeRO-3 reduces each layer's gradients after its backward (fsdp.cpp); here only the
  // chunk's other parameters (embedding, LM head, final norm)
  const bool zero3 = par.zero_stage == 3;
  const double experts = zero3 ? 0.0 : chunk_expert_parameters(job_, pp_rank_, chunk);
  const double bucketed = bucketed_[static_cast<size_t>(chunk)];
  bucketed_[static_cast<size_t>(chunk)] = 0;
  const double params =
      zero3 ? chunk_other_parameters(chunk) : chunk_parameters(job_, pp_rank_, chunk) - experts - bucketed;
  if (zero3 && params == 0) return;
  reduce_gradients(GroupKind::Dp, params, {b_.last_compute(), embedding_ar_});
  // routed experts: reduced over the ranks holding the same experts (all tp, dp/ep blocks)
  if (experts > 0 && par.expert_dp() > 1) reduce_gradients(GroupKind::ExpertDp, experts, {b_.last_compute()});
}

void StageLowering::reduce_gradients(GroupKind group, double params, const std::vector<uint32_t>& deps) {
  const auto& par = job_.parallel;
  const bool fp32 = job_.options.grad_reduce_fp32;
  const OpKind kind = par.zero_stage == 0 ? OpKind::AllReduce : OpKind::ReduceScatter;
  const bool all_reduce = kind == OpKind::AllReduce;
  const char* name = group == GroupKind::ExpertDp ? (all_reduce ? "edp.grad.ar" : "edp.grad.rs")
                                                  : (all_reduce ? "dp.grad.ar" : "dp.grad.rs");
  const uint32_t op = b_.collective(kind, group, Stream::DpComm, name, params * (fp32 ? 4 : 2), deps,
                                    job_.options.overlap.dp ? 1 : 0, fp32 ? DType::FP32 : DType::BF16);
  grad_reduced_.push_back(op);
  if (par.zero_stage >= 2 && !job_.options.overlap.dp) b_.wait_before_next_compute(op);
}

std::vector<StageLowering::GatherBucket> StageLowering::dense_buckets(int64_t chunk) const {
  // A bucket fills with the layers' dense gradients in backward order (the highest layer
  // first) and closes at the first layer that brings it to dp_bucket_params (0: none
  // closes); routed experts, the embedding, the head and the layers left over stay in
  // the chunk's final reduction.
  std::vector<GatherBucket> closed;
  const double per_bucket = static_cast<double>(job_.options.dp_bucket_params);
  if (per_bucket <= 0) return closed;
  const LayerRange r = stage_layers(job_, chunk * P_ + pp_rank_);
  double fill = 0;
  for (int64_t l = r.first + r.count - 1; l >= r.first; --l) {
    fill += layer_parameter_count(job_, l) - layer_expert_parameters(job_, l);
    if (fill < per_bucket) continue;
    closed.push_back({chunk, l, fill});
    fill = 0;
  }
  return closed;
}

void StageLowering::add_to_bucket(int64_t chunk, int64_t layer) {
  // The layer's gradients are final: a bucket closing at it is reduced while the backward
  // goes on (DDP's bucket hook, Megatron-Core's overlap_grad_reduce).
  for (const GatherBucket& b : grad_buckets_[static_cast<size_t>(chunk)]) {
    if (b.first_layer != layer) continue;
    reduce_gradients(GroupKind::Dp, b.params, {b_.last_compute()});
    bucketed_[static_cast<size_t>(chunk)] += b.params;
  }
}

uint32_t StageLowering::gather_parameters(int64_t chunk, std::vector<uint32_t> deps, int32_t priority, double dense) {
  const auto& par = job_.parallel;
  const bool zero3 = par.zero_stage == 3; // layers are gathered one by one (fsdp.cpp)
  const double experts = zero3 ? 0.0 : chunk_expert_parameters(job_, pp_rank_, chunk);
  if (dense < 0) dense = zero3 ? chunk_other_parameters(chunk) : chunk_parameters(job_, pp_rank_, chunk) - experts;
  const double bytes = dense * 2;
  expert_param_ready_[chunk] = kNoOp;
  if (experts > 0 && par.expert_dp() > 1)
    expert_param_ready_[chunk] = b_.collective(OpKind::AllGather, GroupKind::ExpertDp, Stream::DpComm, "edp.param.ag",
                                               experts * 2, deps, priority);
  if (bytes <= 0) return kNoOp; // nothing dense to gather (ZeRO-3 without embedding or head; a ZeRO-1 bucket)
  return b_.collective(OpKind::AllGather, GroupKind::Dp, Stream::DpComm, "dp.param.ag", bytes, deps, priority);
}

bool StageLowering::zero1_overlapped_gather() const {
  return job_.parallel.zero_stage == 1 && job_.options.overlap.dp && job_.parallel.dp_cp() > 1;
}

void StageLowering::gather_buckets() {
  // Megatron-Core 0.8 (optimizer/distrib_optimizer.py): zero_grad() launches the first
  // bucket's all-gather of the parameters the last step updated; each forward pre-hook
  // waits for its bucket and then launches the next (_finish_param_sync_helper), one in
  // flight, in forward order across the model chunks. With CUDA_DEVICE_MAX_CONNECTIONS=1
  // (which Megatron sets for sequence parallelism) kernels leave the one hardware queue
  // in launch order, so the next bucket's gather starts once the computation before that
  // pre-hook has run (and the previous gather is done): it overlaps the bucket's forward.
  // The buckets are those of the gradients (dense_buckets): the chunk's first bucket
  // holds the layers left over at its start with the embedding (and the routed experts,
  // gathered over their own group); the LM head and final norm go with the last.
  buckets_.clear();
  for (int64_t c = 0; c < V_; ++c) {
    const int64_t vs = c * P_ + pp_rank_;
    const double experts = chunk_expert_parameters(job_, pp_rank_, c);
    const double dense = chunk_parameters(job_, pp_rank_, c) - experts;
    std::vector<GatherBucket> closed = grad_buckets_[static_cast<size_t>(c)]; // highest layers first
    double in_buckets = 0;
    for (const GatherBucket& b : closed) in_buckets += b.params;
    const double head = closed.empty() ? 0.0 : head_parameters(job_, vs);
    if (head > 0) closed.front().params += head;
    if (dense - in_buckets - head > 0 || experts > 0) buckets_.push_back({c, -1, dense - in_buckets - head});
    buckets_.insert(buckets_.end(), closed.rbegin(), closed.rend());
  }
  next_bucket_ = 0;
  launch_next_bucket();
}

void StageLowering::launch_next_bucket() {
  if (next_bucket_ >= buckets_.size()) return;
  const GatherBucket& g = buckets_[next_bucket_++];
  const OpLabels saved = b_.labels;
  b_.labels = OpLabels{static_cast<int32_t>(iteration_), -1, static_cast<int32_t>(g.chunk),
                       static_cast<int32_t>(g.first_layer), Phase::Forward};
  const auto priority = static_cast<int32_t>(2 * V_ - g.chunk);
  const std::vector<uint32_t> deps{b_.last_compute(), previous_optimizer_};
  if (g.first_layer < 0)
    param_ready_[g.chunk] = gather_parameters(g.chunk, deps, priority, g.params);
  else
    bucket_gather_[g.first_layer] =
        b_.collective(OpKind::AllGather, GroupKind::Dp, Stream::DpComm, "dp.param.ag", g.params * 2, deps, priority);
  b_.labels = saved;
}

void StageLowering::emit_input_broadcast() {
  // Megatron's get_batch on a stage that needs the batch (tokens on the first, labels on
  // the last): TP rank 0 reads it and broadcasts it to its TP group (mpu.broadcast_data:
  // the sizes, then the int64 tokens and labels), before the forward can start. M8
  // (MegaScale, NSDI'24, data pipeline: redundant dataloader elimination) has one loader per machine write
  // the batch to shared memory, from which every GPU copies it during the previous
  // iteration's gradient sync: no broadcast on the critical path.
  const double tokens = static_cast<double>(job_.parallel.micro_batch * job_.model.seq_len / job_.parallel.cp);
  const uint32_t sizes =
      b_.collective(OpKind::Broadcast, GroupKind::Tp, Stream::TpComm, "data.broadcast.sizes", 8, {b_.last_compute()});
  b_.wait_before_next_compute(
      b_.collective(OpKind::Broadcast, GroupKind::Tp, Stream::TpComm, "data.broadcast", tokens * 8 * 2, {sizes}));
}

void StageLowering::emit_grad_norm_and_loss(double elements) {
  const auto& par = job_.parallel;
  // Gradient clipping (Megatron's clip_grad_norm_fp32): one pass reading the fp32 main
  // gradients of this rank's parameters, then the squared norm summed over the
  // model-parallel group (TP, then the pipeline; with a sharded optimizer also over DP)
  // before the optimizer may scale them.
  const std::array<int64_t, 4> shape{static_cast<int64_t>(elements), 0, 0, 0};
  uint32_t last =
      b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, "optimizer.grad_norm", 2 * elements, 4 * elements, shape);
  const auto reduce = [&](GroupKind g, const char* name) {
    last = b_.collective(OpKind::AllReduce, g, Stream::DpComm, name, 4, {last}, 0, DType::FP32);
  };
  if (par.tp > 1) reduce(GroupKind::Tp, "optimizer.grad_norm.tp.ar");
  if (P_ > 1) reduce(GroupKind::Pp, "optimizer.grad_norm.pp.ar");
  if (par.zero_stage >= 1 && par.dp_cp() > 1) reduce(GroupKind::Dp, "optimizer.grad_norm.dp.ar");
  // The iteration's loss averaged over DP for logging (last stage; one fp32 all-reduce).
  if (pp_rank_ == P_ - 1 && par.dp_cp() > 1) reduce(GroupKind::Dp, "loss.dp.ar");
  b_.wait_before_next_compute(last);
  // PyTorch's clip_grad_norm_(foreach=True) then scales every gradient by the clamped
  // coefficient, clipping or not (OptimizerKernels): read and write 4 bytes each.
  if (job_.options.optimizer_kernels == OptimizerKernels::Foreach)
    b_.compute(OpKind::Elementwise, Kernel::ResidualAdd, "optimizer.grad_clip", elements, 8 * elements, shape);
}

void StageLowering::emit_step(size_t j) {
  const PipelineStep& st = order_[j];
  const auto& opt = job_.options;
  const auto& par = job_.parallel;
  const int64_t vs = st.chunk * P_ + pp_rank_;
  const int64_t last_vs = P_ * V_ - 1;
  const LayerRange layers = stage_layers(job_, vs);
  b_.labels = OpLabels{static_cast<int32_t>(iteration_), static_cast<int32_t>(st.micro_batch),
                       static_cast<int32_t>(st.chunk), -1, st.forward ? Phase::Forward : Phase::Backward};
  // this pass is the chunk's last backward (ZB-H1: its last W pass): DP buckets fill
  bucketing_ = !st.forward && j == last_backward_[st.chunk] && opt.overlap.dp && opt.dp_bucket_params > 0 &&
               par.zero_stage <= 2 && par.dp_cp() > 1;
  if (st.weight) { // ZB-H1's W pass: no messages, the weight gradients in backward order
    if (vs == last_vs) layers_.head_weight_gradients();
    for (int64_t i = layers.count - 1; i >= 0; --i) {
      b_.labels.layer = static_cast<int32_t>(layers.first + i);
      layers_.layer_weight_gradients();
      if (bucketing_) add_to_bucket(st.chunk, layers.first + i);
    }
    b_.labels.layer = -1;
    bucketing_ = false;
    if (j == last_backward_[st.chunk] && (opt.overlap.dp || par.zero_stage >= 2)) {
      if (has_embedding_chunk(st.chunk))
        deferred_reduce_.push_back(st.chunk);
      else
        emit_grad_reduce(st.chunk);
    }
    return;
  }

  // receives
  if (auto [src, msg] = needed_message(st); src >= 0) b_.wait_before_next_compute(ensure_recv(src, msg));
  if (opt.overlap.pp && j + 1 < order_.size())
    if (auto [src, msg] = needed_message(order_[j + 1]); src >= 0) ensure_recv(src, msg, /*needed=*/false);
  if (!opt.overlap.pp) {
    b_.wait_before_next_compute(unfinished_sends_);
    unfinished_sends_.clear();
    b_.wait_before_next_compute(exchange_recvs_);
    exchange_recvs_.clear();
  }

  // parameters of this chunk (ZeRO all-gathers)
  if (st.forward && j == first_forward_[st.chunk]) {
    if (par.zero_stage >= 2 && par.dp_cp() > 1 && param_ready_[st.chunk] == kNoOp) {
      param_ready_[st.chunk] = gather_parameters(st.chunk, {b_.last_compute(), previous_optimizer_}, 0);
    }
    b_.wait_before_next_compute(param_ready_[st.chunk]);
    b_.wait_before_next_compute(expert_param_ready_[st.chunk]);
    // overlapped ZeRO-1: the pre-hook of the chunk's first bucket launches the next one
    if (zero1_overlapped_gather() && next_bucket_ > 0 && buckets_[next_bucket_ - 1].chunk == st.chunk &&
        buckets_[next_bucket_ - 1].first_layer < 0)
      launch_next_bucket();
  }

  if (st.forward) {
    if ((vs == 0 || vs == last_vs) && par.tp > 1 && !opt.async_data_loading) emit_input_broadcast();
    if (vs == 0) layers_.embedding_forward();
    emit_layers(layers, true);
    layers_.fp8_amax_update(true, layers.first, layers.count); // FP8 only (fp8.cpp)
    if (vs == last_vs) layers_.head_forward();
  } else {
    if (vs == last_vs) layers_.head_backward();
    emit_layers(layers, false);
    bucketing_ = false;
    layers_.fp8_amax_update(false, layers.first, layers.count);
    if (vs == 0) layers_.embedding_backward();
  }

  // sends (Megatron's interleaved exchange: a steady-state forward's after the next backward)
  const bool exchange = megatron_exchange(job_);
  const MegatronExchange flags =
      exchange ? megatron_exchange_after(P_, V_, M_, pp_rank_, static_cast<int64_t>(j)) : MegatronExchange{};
  const auto send_activation = [&] {
    unfinished_sends_.push_back(b_.p2p(OpKind::Send, static_cast<int32_t>((pp_rank_ + 1) % P_), "pp.send.activation",
                                       act_bytes_, {b_.last_compute()}));
  };
  // Megatron batches an exchange's sends (gradient to the previous rank, then activation
  // to the next) in one NCCL group, where they progress together; here a rank's sends
  // share one stream in program order, so the held activation goes first: with the
  // gradient first the send stream would wait on the previous rank while the next one
  // waits for the activation (a deadlock of the stream model, not of Megatron).
  if (exchange && !flags.after) {
    deferred_activation_ = st.forward && vs < last_vs;
    deferred_labels_ = b_.labels;
  } else {
    if (deferred_activation_) {
      const OpLabels saved = b_.labels;
      b_.labels = deferred_labels_;
      send_activation();
      b_.labels = saved;
      deferred_activation_ = false;
    }
    if (st.forward && vs < last_vs) send_activation();
  }
  if (!st.forward && !st.weight && vs > 0)
    unfinished_sends_.push_back(b_.p2p(OpKind::Send, static_cast<int32_t>((pp_rank_ - 1 + P_) % P_), "pp.send.gradient",
                                       act_bytes_, {b_.last_compute()}));
  if (flags.recv_prev) exchange_recvs_.push_back(post_next_recv((pp_rank_ - 1 + P_) % P_));
  if (flags.recv_next) exchange_recvs_.push_back(post_next_recv((pp_rank_ + 1) % P_));

  // M4 with overlap: the next chunk's all-gather is launched during this chunk's forward
  if (st.forward && j == first_forward_[st.chunk] && par.zero_stage >= 2 && par.dp_cp() > 1 && opt.overlap.dp &&
      st.chunk + 1 < V_) {
    const int64_t next = st.chunk + 1;
    param_ready_[next] =
        gather_parameters(next, {b_.last_compute(), previous_optimizer_}, static_cast<int32_t>(2 * V_ - next));
  }
  // gradients of this chunk are final after its last backward
  // (the chunk holding the tied embedding waits for the embedding all-reduce at the end)
  if (!st.forward && j == last_backward_[st.chunk] && (opt.overlap.dp || par.zero_stage >= 2)) {
    if (has_embedding_chunk(st.chunk))
      deferred_reduce_.push_back(st.chunk);
    else
      emit_grad_reduce(st.chunk);
  }
}

void StageLowering::emit_iteration_end() {
  const auto& opt = job_.options;
  const auto& par = job_.parallel;
  b_.labels = OpLabels{static_cast<int32_t>(iteration_), -1, -1, -1, Phase::Optimizer};
  // After the pipeline flush (Megatron's finalize_model_grads): the tied-embedding
  // gradient all-reduce between the first and last stage, then the DP reductions not yet
  // launched (all of them without DP overlap; with it, the embedding chunk's).
  for (int64_t c = 0; c < V_; ++c)
    if (has_embedding_chunk(c)) emit_embedding_allreduce();
  if (!(opt.overlap.dp || par.zero_stage >= 2))
    for (int64_t c = V_ - 1; c >= 0; --c) emit_grad_reduce(c);
  for (int64_t c : deferred_reduce_) emit_grad_reduce(c);
  deferred_reduce_.clear();
  if (opt.async_data_loading && iteration_ + 1 < opt.iterations) emit_data_op(iteration_ + 1, true);

  b_.wait_before_next_compute(grad_reduced_);
  grad_reduced_.clear();
  embedding_ar_ = kNoOp;
  const bool sharded = par.zero_stage >= 1;
  double elements = stage_parameters(job_, pp_rank_) / (sharded ? static_cast<double>(par.dp_cp()) : 1.0);
  if (sharded && job_.model.experts > 0) { // routed experts are sharded over their holders
    double experts = 0;
    for (int64_t c = 0; c < V_; ++c) experts += chunk_expert_parameters(job_, pp_rank_, c);
    elements = (stage_parameters(job_, pp_rank_) - experts) / static_cast<double>(par.dp_cp()) +
               experts / static_cast<double>(par.expert_dp());
  }
  emit_grad_norm_and_loss(elements);
  const std::array<int64_t, 4> shape{static_cast<int64_t>(elements), 0, 0, 0};
  Op op;
  op.kind = OpKind::OptimizerStep;
  op.stream = Stream::Compute;
  op.dtype = DType::FP32;
  op.shape = shape;
  if (opt.optimizer == OptimizerKind::Adam) {
    // fused: read grad (2 B), master, m, v (12 B); write master, m, v (12 B) and BF16 param
    // (2 B). foreach: PyTorch's eight passes over fp32 weights, gradients and moments
    // (OptimizerKernels): mul_ w (8 B), lerp_ m (12), mul_ v (8), addcmul_ v (12), sqrt v
    // (8), div_ and add_ of that (16), addcdiv_ w (16)
    op.kernel = Kernel::AdamStep;
    op.flops = 12 * elements;
    op.bytes = (opt.optimizer_kernels == OptimizerKernels::Foreach ? 80 : 28) * elements;
    previous_optimizer_ = b_.add(op, "optimizer.adam");
  } else {
    // LAMB: pass 1 computes the Adam-style update and the per-tensor norms of weights and
    // updates; the trust ratio needs those norms summed over the shards; pass 2 applies.
    op.kernel = Kernel::LambStep;
    op.flops = 14 * elements;
    op.bytes = 26 * elements;
    const uint32_t pass1 = b_.add(op, "optimizer.lamb.update");
    if (sharded && par.dp_cp() > 1) {
      int64_t stage_layer_count = 0;
      for (int64_t c = 0; c < V_; ++c) stage_layer_count += stage_layers(job_, c * P_ + pp_rank_).count;
      const double tensors = static_cast<double>(stage_layer_count) * 12 + 4;
      b_.wait_before_next_compute(b_.collective(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm,
                                                "optimizer.lamb.norms.ar", tensors * 2 * 4, {pass1}, 0, DType::FP32));
    }
    op.flops = 4 * elements;
    op.bytes = 14 * elements;
    previous_optimizer_ = b_.add(op, "optimizer.lamb.apply");
  }
  if (par.zero_stage == 1 && par.dp_cp() > 1 && !opt.overlap.dp) { // distributed optimizer: gather updated params
    for (int64_t c = 0; c < V_; ++c) {
      param_ready_[c] = gather_parameters(c, {previous_optimizer_}, 0);
      b_.wait_before_next_compute(param_ready_[c]);
      b_.wait_before_next_compute(expert_param_ready_[c]);
    }
  } else { // overlapped ZeRO-1: gathered at the start of the next iteration (gather_buckets)
    std::fill(param_ready_.begin(), param_ready_.end(), kNoOp);
    std::fill(expert_param_ready_.begin(), expert_param_ready_.end(), kNoOp);
  }
}

Program StageLowering::run(const Program* sibling) {
  const auto& opt = job_.options;
  const auto& par = job_.parallel;
  { // a generous estimate of the ops, to avoid regrowing a multi-megabyte vector; with a
    // sibling stage's program, its sizes and an eighth more (the estimate is several times
    // the real size, and every reserved page that gets touched is one the kernel zeroes)
    const int64_t per_layer = 40 * Dims::of(job_).tp_chunks + (opt.recompute ? 40 : 0);
    size_t ops = static_cast<size_t>(opt.iterations) * order_.size() *
                 static_cast<size_t>(max_stage_layers(job_) * per_layer + 24);
    size_t deps = ops * 3 / 2;
    if (sibling != nullptr && !sibling->ops.empty()) {
      ops = std::min(ops, sibling->ops.size() + sibling->ops.size() / 8 + 64);
      deps = std::min(deps, sibling->deps.size() + sibling->deps.size() / 8 + 64);
    }
    b_.reserve(ops, deps);
  }
  for (iteration_ = 0; iteration_ < opt.iterations; ++iteration_) {
    if (opt.async_data_loading) {
      if (iteration_ == 0) emit_data_op(0, true);
      b_.wait_before_next_compute(next_data_);
      next_data_ = kNoOp;
    } else {
      emit_data_op(iteration_, false);
    }
    // M4: prefetch the first chunk's parameters at the start of the iteration
    if (par.zero_stage >= 2 && par.dp_cp() > 1 && opt.overlap.dp) {
      b_.labels = OpLabels{static_cast<int32_t>(iteration_), -1, 0, -1, Phase::Forward};
      param_ready_[0] = gather_parameters(0, {previous_optimizer_}, static_cast<int32_t>(2 * V_));
    }
    if (zero1_overlapped_gather()) gather_buckets();
    for (size_t j = 0; j < order_.size(); ++j) emit_step(j);
    emit_iteration_end();
  }
  // every message sent to this rank has been received
  for (auto& [src, list] : incoming_)
    TWINSCALE_ASSERT(recv_ops_[src].size() == list.size(), "unreceived pipeline messages");
  return b_.take();
}

} // namespace twinscale::schedules::detail
