#include "schedules/check_job.hpp"

#include <string>

#include "schedules/error.hpp"
#include "schedules/limits.hpp"

namespace twinscale::schedules {

namespace {
std::string str(int64_t v) { return std::to_string(v); }

void require(bool ok, const std::string& message) {
  if (!ok) throw JobError(message);
}
} // namespace

void check_job(const JobSpec& job) {
  const ModelSpec& m = job.model;
  const ParallelSpec& p = job.parallel;
  const ScheduleOptions& o = job.options;
  const std::string who = "job '" + job.name + "': ";

  require(m.layers >= 1 && m.hidden >= 1 && m.heads >= 1 && m.seq_len >= 1 && m.vocab >= 1 && m.ffn_hidden >= 1,
          who + "model.layers, hidden, heads, seq_len, vocab and ffn_hidden must all be ≥ 1");
  require(p.tp >= 1 && p.pp >= 1 && p.vpp >= 1 && p.dp >= 1 && p.micro_batch >= 1 && p.global_batch >= 1,
          who + "parallel.tp, pp, vpp, dp, micro_batch and global_batch must all be ≥ 1");
  // Upper bounds first, so that no product below can overflow (limits.hpp has the reasons).
  auto at_most = [&](const char* key, int64_t v, int64_t max, const char* reason) {
    try {
      require_at_most(key, v, max, reason);
    } catch (const JobError& e) {
      throw JobError(who + e.what());
    }
  };
  at_most("model.layers", m.layers, kMaxLayers, "the largest published dense models have ≤ 200 layers");
  at_most("model.hidden", m.hidden, kMaxHidden, "2^20; GPT-530B has 20,480");
  at_most("model.heads", m.heads, kMaxHidden, "2^20");
  at_most("model.ffn_hidden", m.ffn_hidden, kMaxFfnHidden, "2^22 = 4·2^20");
  at_most("model.seq_len", m.seq_len, kMaxSeqLen, "2^24 tokens");
  at_most("model.vocab", m.vocab, kMaxVocab, "2^24 tokens");
  at_most("model.window", m.window, kMaxSeqLen, "2^24 tokens");
  at_most("parallel.vpp", p.vpp, kMaxLayers, "at most one layer per virtual stage");
  at_most("parallel.micro_batch", p.micro_batch, kMaxMicroBatch, "2^20 sequences");
  at_most("parallel.global_batch", p.global_batch, kMaxGlobalBatch, "2^24 sequences");
  at_most("schedule.iterations", o.iterations, 1000, "iterations are lowered back to back");
  try {
    check_layout_sizes(p.tp, p.dp, p.pp, "parallel");
  } catch (const JobError& e) {
    throw JobError(who + e.what());
  }
  const int64_t tokens = p.micro_batch * m.seq_len; // ≤ 2^44 after the bounds above
  at_most("parallel.micro_batch·model.seq_len", tokens, kMaxMicroBatchTokens,
          "tokens of one micro-batch; GEMM dimensions are 32-bit in cuBLAS");
  require(m.hidden % m.heads == 0,
          who + "model.hidden = " + str(m.hidden) + " is not divisible by model.heads = " + str(m.heads));
  require(m.heads % p.tp == 0, who + "model.heads = " + str(m.heads) + " is not divisible by parallel.tp = " +
                                   str(p.tp) + " (each TP rank holds whole heads)");
  require(m.ffn_hidden % p.tp == 0,
          who + "model.ffn_hidden = " + str(m.ffn_hidden) + " is not divisible by parallel.tp = " + str(p.tp));
  require(m.vocab % p.tp == 0, who + "model.vocab = " + str(m.vocab) + " is not divisible by parallel.tp = " +
                                   str(p.tp) + " (vocabulary-parallel embedding)");
  require(m.layers % saturating_mul(p.pp, p.vpp) == 0, who + "model.layers = " + str(m.layers) +
                                                           " is not divisible by parallel.pp·vpp = " + str(p.pp) + "·" +
                                                           str(p.vpp) + " = " + str(saturating_mul(p.pp, p.vpp)) +
                                                           " (every virtual stage needs the same number of layers)");
  require(p.global_batch % (p.dp * p.micro_batch) == 0,
          who + "parallel.global_batch = " + str(p.global_batch) + " is not divisible by parallel.dp·micro_batch = " +
              str(p.dp) + "·" + str(p.micro_batch) + " = " + str(p.dp * p.micro_batch));
  require(p.zero_stage >= 0 && p.zero_stage <= 2,
          who + "parallel.zero_stage = " + str(p.zero_stage) + "; valid: 0, 1, 2");
  if (o.pipeline == PipelineKind::Interleaved) {
    require(p.pp > 1, who + "schedule.pipeline = \"interleaved\" needs parallel.pp > 1 (pp = 1)");
    require(p.micro_batches() % p.pp == 0, who +
                                               "schedule.pipeline = \"interleaved\" needs micro-batches % pp == 0 "
                                               "(Megatron's rule); micro-batches = global_batch/(dp·micro_batch) = " +
                                               str(p.micro_batches()) + ", pp = " + str(p.pp));
  } else {
    require(p.vpp == 1, who + "parallel.vpp = " + str(p.vpp) + " > 1 needs schedule.pipeline = \"interleaved\"");
  }
  if (m.attention == AttentionKind::Sliding)
    require(m.window > 0 && m.window <= m.seq_len,
            who + "model.attention = \"sliding\" needs 0 < model.window ≤ seq_len = " + str(m.seq_len) +
                "; window = " + str(m.window));
  require(o.overlap.tp_chunks >= 1 && o.overlap.tp_chunks <= 64,
          who + "schedule.overlap.tp_chunks = " + str(o.overlap.tp_chunks) + "; valid: 1 to 64");
  require(o.overlap.tp_chunks == 1 || tokens % o.overlap.tp_chunks == 0,
          who + "schedule.overlap.tp_chunks = " + str(o.overlap.tp_chunks) +
              " must divide micro_batch·seq_len = " + str(tokens));
  require(!p.sequence_parallel || tokens % p.tp == 0,
          who + "parallel.sequence_parallel needs micro_batch·seq_len divisible by tp");
  require(o.iterations >= 1, who + "schedule.iterations must be ≥ 1");
  require(m.kv() >= 1 && m.heads % m.kv() == 0 && m.kv() % p.tp == 0, who + "model.kv_heads = " + str(m.kv()) +
                                                                          " must divide heads = " + str(m.heads) +
                                                                          " and be a multiple of tp = " + str(p.tp));
  require(!p.pp_scatter_gather || (p.tp > 1 && p.pp > 1 && !p.sequence_parallel),
          who +
              "parallel.pp_scatter_gather splits pipeline sends over the TP group: it needs tp > 1 "
              "and pp > 1 and sequence_parallel = false (with it the activation is already split); "
              "got tp = " +
              str(p.tp) + ", pp = " + str(p.pp) + ", sequence_parallel = " + (p.sequence_parallel ? "true" : "false"));
}

} // namespace twinscale::schedules
