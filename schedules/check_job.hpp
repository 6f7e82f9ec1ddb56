// Consistency checks of a job description that the TOML reader cannot do key by key.
#pragma once

#include "schedules/job.hpp"

namespace twinscale::schedules {

/// Throws JobError naming the key(s) and the violated constraint when the job is
/// impossible: tp·pp·dp ≠ gpus implied, layers % (pp·vpp) ≠ 0, heads % tp ≠ 0,
/// hidden % heads ≠ 0, global_batch % (dp·micro_batch) ≠ 0, interleaved with
/// micro-batches % pp ≠ 0 (Megatron's rule), vpp > 1 without interleaved (and vice
/// versa), interleaved with pp = 1, sliding attention without 0 < window ≤ seq_len,
/// zero_stage ∉ {0,1,2}, tp_chunks < 1, vocab % tp ≠ 0, ffn_hidden % tp ≠ 0.
void check_job(const JobSpec& job);

} // namespace twinscale::schedules
