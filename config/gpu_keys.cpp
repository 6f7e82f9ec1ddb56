#include "config/gpu_keys.hpp"

#include <utility>

namespace twinscale::config {

namespace {

using G = topology::GpuSpec;
using K = topology::KernelFigures;
using A = topology::AttentionFigures;
using Nv = topology::NvlinkSpec;

/// A key every entry must state ("custom" GPUs too); a cluster table may override it.
template <auto... Ms>
GpuKey given(std::string key) {
  return member<G, Ms...>(std::move(key)).must_be_given();
}

void device_keys(std::vector<GpuKey>& k) {
  k.push_back(given<&G::peak_flops>("peak_flops")
                  .range_number(kAboveZero, 1e300)
                  .in("FLOP/s")
                  .says("dense BF16/FP16 tensor FLOP/s at the boost clock (datasheet)"));
  k.push_back(member<G, &G::fp8_peak_flops>("fp8_peak_flops")
                  .range_number(0, 1e300)
                  .in("FLOP/s")
                  .says("dense FP8 tensor FLOP/s at the boost clock (datasheet); 0 = no FP8 tensor cores "
                        "(precision.gemm = \"fp8\" is refused)"));
  k.push_back(given<&G::hbm_bw_bytes_per_s>("hbm_bw_bytes_per_s")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes/s")
                  .says("HBM bandwidth (datasheet)"));
  k.push_back(given<&G::memory_bytes>("memory_bytes")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes")
                  .says("HBM capacity as the driver reports it (nvidia-smi's total), else the datasheet's"));
  k.push_back(given<&G::pcie_bw_bytes_per_s>("pcie_bw_bytes_per_s")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes/s")
                  .says("host interface GPU ↔ NIC, per direction (a server may override it)"));
  k.push_back(given<&G::sms>("sms").range(1, 100000).says(
      "streaming multiprocessors (whitepaper); GEMM waves are counted over them"));
  k.push_back(given<&G::nvlink, &Nv::generation>("nvlink")
                  .read_by_hand()
                  .values_are("an entry of presets/hardware/nvlink.toml")
                  .says("NVLink generation: links, per-link bandwidth and efficiency"));
  k.push_back(member<G, &G::nvlink_bw_bytes_per_s>("nvlink_bw_bytes_per_s")
                  .range_number(kAboveZero, 1e300)
                  .in("bytes/s")
                  .read_by_hand()
                  .default_is("links × link bandwidth of the NVLink generation")
                  .says("NVLink bandwidth per GPU, per direction, into the NVSwitch"));
  k.push_back(member<G, &G::nvlink, &Nv::efficiency>("nvlink_efficiency")
                  .range_number(kAboveZero, 1)
                  .default_is("the NVLink generation's")
                  .says("achieved / raw NVLink bandwidth (nccl-tests busbw inside a server)"));
  k.push_back(given<&G::compute_capability>("compute_capability")
                  .range(10, 1000)
                  .read_by_hand()
                  .says("CUDA compute capability × 10 (80 = sm_80); picks NCCL's tuner figures of the "
                        "generation (presets/hardware/nccl.toml: the set with the greatest "
                        "min_compute_capability not above it)"));
}

/// A fused-attention kernel's curve (KernelFigures::*F): its keys `prefix`keys_half and
/// `prefix`unmasked_ratio.
template <auto F>
void attention_curve_keys(std::vector<GpuKey>& k, const std::string& prefix, const std::string& kernel) {
  k.push_back(member<G, &G::kernels, F, &A::keys_half>(prefix + "keys_half")
                  .range_number(0, 1e9)
                  .says("keys per query at which " + kernel +
                        " reaches half its long-sequence rate: the efficiencies above are quoted over 4,096 keys "
                        "and scale by L/(L + this) for L keys (0 = the same rate at every length)"));
  k.push_back(member<G, &G::kernels, F, &A::unmasked_ratio>(prefix + "unmasked_ratio")
                  .range_number(kAboveZero, 4)
                  .says(kernel + "'s rate over blocks without a causal mask (a context-parallel ring step, a "
                                 "sliding window's band) / its causal rate over as many keys"));
}

void kernel_keys(std::vector<GpuKey>& k) {
  const auto fraction = [](GpuKey f) { return std::move(f.range_number(kAboveZero, 1)); };
  k.push_back(fraction(given<&G::kernels, &K::sustained_clock_ratio>("sustained_clock_ratio"))
                  .says("tensor clock sustained under the power limit in GEMM-heavy training / the boost clock "
                        "the peak is quoted at (1 where no public per-GPU measurement exists)"));
  k.push_back(fraction(given<&G::kernels, &K::gemm_max_efficiency>("gemm_max_efficiency"))
                  .says("achieved fraction of peak of a large BF16 cuBLAS GEMM whose tiles fill whole waves"));
  k.push_back(member<G, &G::kernels, &K::fp8_gemm_max_efficiency>("fp8_gemm_max_efficiency")
                  .range_number(0, 1)
                  .says("achieved fraction of fp8_peak_flops of a large FP8 GEMM (cuBLASLt); 0 = the BF16 "
                        "fraction gemm_max_efficiency"));
  k.push_back(given<&G::kernels, &K::gemm_half_dim>("gemm_half_dim")
                  .range_number(0, 1e300)
                  .says("a GEMM dimension this small halves the efficiency (skinny shapes)"));
  k.push_back(given<&G::kernels, &K::gemm_tile_m>("gemm_tile_m")
                  .range(1, 4096)
                  .says("rows of one thread block's output tile (wave quantisation)"));
  k.push_back(given<&G::kernels, &K::gemm_tile_n>("gemm_tile_n")
                  .range(1, 4096)
                  .says("columns of one thread block's output tile"));
  k.push_back(fraction(given<&G::kernels, &K::flash, &A::fwd_efficiency>("flash_fwd_efficiency"))
                  .says("FlashAttention-2 forward, achieved fraction of peak"));
  k.push_back(fraction(given<&G::kernels, &K::flash, &A::bwd_efficiency>("flash_bwd_efficiency"))
                  .says("FlashAttention-2 backward, achieved fraction of peak"));
  attention_curve_keys<&K::flash>(k, "flash_", "FlashAttention");
  k.push_back(member<G, &G::kernels, &K::cudnn, &A::fwd_efficiency>("cudnn_attention_fwd_efficiency")
                  .range_number(0, 1)
                  .says("cuDNN's fused attention (Transformer Engine's FusedAttention) forward, achieved "
                        "fraction of peak over 4,096 causal keys; 0 = no figure (a job with "
                        "schedule.operators.attention_backend = \"cudnn\" is refused)"));
  k.push_back(member<G, &G::kernels, &K::cudnn, &A::bwd_efficiency>("cudnn_attention_bwd_efficiency")
                  .range_number(0, 1)
                  .says("cuDNN's fused attention backward, as the forward"));
  attention_curve_keys<&K::cudnn>(k, "cudnn_attention_", "cuDNN's fused attention");
  k.push_back(fraction(given<&G::kernels, &K::vector_flop_efficiency>("vector_flop_efficiency"))
                  .says("FLOP rate of memory-bound kernels as a fraction of peak (never the bound)"));
  k.push_back(fraction(given<&G::kernels, &K::hbm_efficiency>("hbm_efficiency"))
                  .says("achieved fraction of HBM bandwidth by streaming kernels"));
  k.push_back(given<&G::kernels, &K::kernel_launch_s>("kernel_launch_s")
                  .range_number(0, 1)
                  .in("s")
                  .says("launch + tail cost of one kernel"));
  k.push_back(member<G, &G::kernels, &K::op_issue_gap_s>("op_issue_gap_s")
                  .range_number(0, 1)
                  .in("s")
                  .says("idle stream time before each compute op, the host's hand-off of a ready op "
                        "(`twinscale probe` measures it on the CPU device)"));
  k.push_back(given<&G::kernels, &K::nccl_sms_per_channel>("nccl_sms_per_channel")
                  .range_number(0, 1e6)
                  .says("SMs (CTAs) one NCCL channel occupies while it runs"));
  k.push_back(given<&G::kernels, &K::nccl_hbm_share>("nccl_hbm_share")
                  .range_number(0, 1)
                  .says("fraction of HBM bandwidth a communication kernel's copies take while it runs"));
  k.push_back(given<&G::kernels, &K::speed_sigma>("speed_sigma")
                  .range_number(0, 0.2)
                  .says("per-GPU speed variation of one SKU: standard deviation of a GPU's kernel-time "
                        "multiplier (normal around 1), drawn per seed"));
}

std::vector<GpuKey> build_keys() {
  std::vector<GpuKey> k;
  device_keys(k);
  kernel_keys(k);
  for (GpuKey& f : k) f.json_key.clear(); // catalogue and cluster files only: no JSON form
  return k;
}

} // namespace

const std::vector<GpuKey>& gpu_keys() {
  static const std::vector<GpuKey> keys = build_keys();
  return keys;
}

const std::vector<KeySection>& gpu_sections() {
  static const std::vector<KeySection> sections = {
      {"", "", true, false,
       "The figures of one GPU model: a [NAME] table of presets/hardware/gpus.toml, where each figure's "
       "source is written beside it. A cluster file's [gpu] (model = \"custom\": every required key) and "
       "[[gpu_groups]] tables take the same keys, overriding the model's figures."},
  };
  return sections;
}

} // namespace twinscale::config
