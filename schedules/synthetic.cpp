#include "schedules/synthetic.hpp"

#include <initializer_list>
#include <string>

namespace twinscale::schedules {

namespace {

struct ProgramBuilder {
  Program program;
  Schedule& schedule;

  uint32_t name_id(const std::string& name) {
    for (uint32_t i = 0; i < schedule.names.size(); ++i)
      if (schedule.names[i] == name) return i;
    schedule.names.push_back(name);
    return static_cast<uint32_t>(schedule.names.size() - 1);
  }
  int64_t add(Op op, const std::string& name, std::initializer_list<int64_t> deps) {
    op.name = name_id(name);
    op.dep_begin = static_cast<uint32_t>(program.deps.size());
    for (int64_t d : deps)
      if (d >= 0) program.deps.push_back(static_cast<uint32_t>(d));
    op.dep_count = static_cast<uint32_t>(program.deps.size()) - op.dep_begin;
    program.ops.push_back(op);
    return static_cast<int64_t>(program.ops.size() - 1);
  }
};

Op compute(OpKind kind, Kernel kernel, std::array<int64_t, 4> shape, double flops, double bytes, Phase phase,
           int32_t mb) {
  Op op;
  op.kind = kind;
  op.kernel = kernel;
  op.stream = Stream::Compute;
  op.shape = shape;
  op.flops = flops;
  op.bytes = bytes;
  op.labels.phase = phase;
  op.labels.micro_batch = mb;
  return op;
}

Op comm(OpKind kind, GroupKind group, Stream stream, double bytes, int32_t peer, Phase phase, int32_t mb) {
  Op op;
  op.kind = kind;
  op.stream = stream;
  op.group = group;
  op.bytes = bytes;
  op.peer = peer;
  op.labels.phase = phase;
  op.labels.micro_batch = mb;
  return op;
}

} // namespace

Schedule synthetic_schedule(const Layout& layout, const SyntheticOptions& o) {
  Schedule s;
  s.layout = layout;
  s.job.name = "synthetic";
  s.job.parallel.tp = layout.tp;
  s.job.parallel.pp = layout.pp;
  s.job.parallel.dp = layout.dp;
  s.job.parallel.micro_batch = 1;
  s.job.parallel.global_batch = o.micro_batches * layout.dp;
  const double h = static_cast<double>(o.hidden), t = static_cast<double>(o.tokens);
  const double act_bytes = 2.0 * t * h; // bf16 activations
  const std::array<int64_t, 4> gemm_shape{o.tokens, o.hidden, o.hidden, 0};
  const double gemm_flops = 2.0 * t * h * h;

  for (int64_t stage = 0; stage < layout.pp; ++stage) {
    ProgramBuilder b{Program{}, s};
    const bool first = stage == 0, last = stage == layout.pp - 1;
    std::vector<int64_t> fwd_out(static_cast<size_t>(o.micro_batches), -1);
    int64_t prev_bwd_send = -1;
    for (int32_t mb = 0; mb < o.micro_batches; ++mb) {
      int64_t in = -1;
      if (!first)
        in = b.add(comm(OpKind::Recv, GroupKind::Pp, Stream::PpRecv, act_bytes, static_cast<int32_t>(stage - 1),
                        Phase::Forward, mb),
                   "fwd.recv", {});
      int64_t x = in;
      for (int64_t g = 0; g < o.gemms_per_stage; ++g) {
        const int64_t ln = b.add(compute(OpKind::Elementwise, Kernel::FusedLayerNorm, {o.tokens * o.hidden, 0, 0, 0},
                                         5 * t * h, 2 * act_bytes, Phase::Forward, mb),
                                 "fwd.layernorm", {x});
        const int64_t mm =
            b.add(compute(OpKind::Gemm, Kernel::Gemm, gemm_shape, gemm_flops, 3 * act_bytes, Phase::Forward, mb),
                  "fwd.gemm", {ln});
        x = b.add(comm(OpKind::AllReduce, GroupKind::Tp, Stream::TpComm, act_bytes, -1, Phase::Forward, mb),
                  "fwd.tp_all_reduce", {mm});
      }
      const int64_t act = b.add(compute(OpKind::Elementwise, Kernel::FusedBiasGelu, {o.tokens * o.hidden, 0, 0, 0},
                                        8 * t * h, 2 * act_bytes, Phase::Forward, mb),
                                "fwd.gelu", {x});
      fwd_out[static_cast<size_t>(mb)] = act;
      if (!last)
        b.add(comm(OpKind::Send, GroupKind::Pp, Stream::PpSend, act_bytes, static_cast<int32_t>(stage + 1),
                   Phase::Forward, mb),
              "fwd.send", {act});
    }
    int64_t last_bwd = -1;
    for (int32_t mb = 0; mb < o.micro_batches; ++mb) {
      int64_t in = fwd_out[static_cast<size_t>(mb)];
      if (!last)
        in = b.add(comm(OpKind::Recv, GroupKind::Pp, Stream::PpRecv, act_bytes, static_cast<int32_t>(stage + 1),
                        Phase::Backward, mb),
                   "bwd.recv", {in});
      int64_t x = in;
      for (int64_t g = 0; g < o.gemms_per_stage; ++g) {
        const int64_t dgrad =
            b.add(compute(OpKind::Gemm, Kernel::Gemm, gemm_shape, gemm_flops, 3 * act_bytes, Phase::Backward, mb),
                  "bwd.gemm_dgrad", {x});
        b.add(compute(OpKind::Gemm, Kernel::Gemm, {o.hidden, o.hidden, o.tokens, 0}, gemm_flops, 3 * act_bytes,
                      Phase::Backward, mb),
              "bwd.gemm_wgrad", {x});
        x = b.add(comm(OpKind::AllReduce, GroupKind::Tp, Stream::TpComm, act_bytes, -1, Phase::Backward, mb),
                  "bwd.tp_all_reduce", {dgrad});
      }
      last_bwd = x;
      if (!first)
        prev_bwd_send = b.add(comm(OpKind::Send, GroupKind::Pp, Stream::PpSend, act_bytes,
                                   static_cast<int32_t>(stage - 1), Phase::Backward, mb),
                              "bwd.send", {x});
    }
    // Gradient synchronisation and the optimizer step (parameters: gemms · h² per stage).
    const double params = static_cast<double>(o.gemms_per_stage) * h * h;
    const int64_t dp =
        b.add(comm(OpKind::AllReduce, GroupKind::Dp, Stream::DpComm, 4 * params, -1, Phase::Optimizer, -1),
              "opt.dp_all_reduce_grads", {last_bwd});
    int64_t emb = -1;
    if (layout.pp > 1 && (first || last))
      emb = b.add(comm(OpKind::AllReduce, GroupKind::Embedding, Stream::DpComm, 4 * h * 16, -1, Phase::Optimizer, -1),
                  "opt.embedding_all_reduce", {last_bwd});
    b.add(compute(OpKind::OptimizerStep, Kernel::AdamStep, {static_cast<int64_t>(params), 0, 0, 0}, 10 * params,
                  16 * params, Phase::Optimizer, -1),
          "opt.adam", {dp, emb, prev_bwd_send});
    s.programs.push_back(std::move(b.program));
  }
  s.program_of_rank.resize(static_cast<size_t>(layout.world()));
  for (int64_t r = 0; r < layout.world(); ++r)
    s.program_of_rank[static_cast<size_t>(r)] = static_cast<uint32_t>(layout.coord(r).pp);
  s.memory_by_stage.resize(static_cast<size_t>(layout.pp));
  return s;
}

} // namespace twinscale::schedules
