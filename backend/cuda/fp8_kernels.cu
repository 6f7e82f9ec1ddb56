// FP8 casts, transposes and the scale update of the CUDA device, and the probe's
// transfer patterns (fp8_kernels.hpp).
#include "backend/cuda/fp8_kernels.hpp"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

namespace twinscale::backend::cuda {

namespace {

constexpr int kTile = 32;
constexpr int kRowsPerPass = 8; // a block is kTile × kRowsPerPass threads
constexpr int kThreads = 256;

int blocks_for(int64_t n, int64_t per_block) {
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>((n + per_block - 1) / per_block, 1), 65535));
}

__device__ void fold_amax(float local, float* amax) {
  for (int off = 16; off > 0; off /= 2) local = fmaxf(local, __shfl_xor_sync(0xffffffffu, local, off));
  if ((threadIdx.x & 31) == 0) atomicMax(reinterpret_cast<int*>(amax), __float_as_int(local));
}

__global__ void cast_transpose(int mode, bool e5m2, const void* xv, uint8_t* y, uint8_t* yt, int64_t rows, int64_t cols,
                               const float* scale, float* amax) {
  __shared__ uint8_t tile[kTile][kTile + 1];
  const auto* x = static_cast<const __nv_bfloat16*>(xv);
  const auto* x8 = static_cast<const uint8_t*>(xv);
  const __nv_fp8_interpretation_t kind = e5m2 ? __NV_E5M2 : __NV_E4M3;
  const float s = mode == 2 ? 1.0f : *scale; // a transpose has no scale (nor amax)
  float local = 0;
  const int64_t tiles_c = (cols + kTile - 1) / kTile, tiles = ((rows + kTile - 1) / kTile) * tiles_c;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t r0 = (t / tiles_c) * kTile, c0 = (t % tiles_c) * kTile;
    for (int j = threadIdx.y; j < kTile; j += kRowsPerPass) {
      const int64_t r = r0 + j, c = c0 + threadIdx.x;
      if (r >= rows || c >= cols) continue;
      uint8_t v;
      if (mode == 2) {
        v = x8[r * cols + c];
      } else {
        const float f = __bfloat162float(x[r * cols + c]);
        local = fmaxf(local, fabsf(f));
        v = __nv_cvt_float_to_fp8(f * s, __NV_SATFINITE, kind);
        y[r * cols + c] = v;
      }
      tile[j][threadIdx.x] = v;
    }
    if (mode == 0) continue; // uniform over the block
    __syncthreads();
    for (int j = threadIdx.y; j < kTile; j += kRowsPerPass) {
      const int64_t r = c0 + j, c = r0 + threadIdx.x; // yt is cols × rows
      if (r < cols && c < rows) yt[r * rows + c] = tile[threadIdx.x][j];
    }
    __syncthreads();
  }
  if (mode != 2) fold_amax(local, amax);
}

__global__ void scale_update(const float* from, float* to, float* amax, float* scale, float* scale_inv, int64_t tensors,
                             int64_t len, float fp8_max) {
  __shared__ float red[kThreads];
  for (int64_t t = blockIdx.x; t < tensors; t += gridDim.x) {
    const float* h = from + t * len;
    float* o = to + t * len;
    float mx = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float v = j == 0 ? amax[t] : h[j - 1];
      o[j] = v;
      mx = fmaxf(mx, v);
    }
    red[threadIdx.x] = mx;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) red[threadIdx.x] = fmaxf(red[threadIdx.x], red[threadIdx.x + k]);
      __syncthreads();
    }
    if (threadIdx.x == 0) {
      scale[t] = red[0] > 0 ? fp8_max / red[0] : 1.0f;
      scale_inv[t] = 1.0f / scale[t];
      amax[t] = 0;
    }
    __syncthreads();
  }
}

__global__ void fp8_fill(uint8_t* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = static_cast<uint8_t>(((i * 2654435761ull) >> 11) & 0xF7); // bit 3 clear: exponent < all ones
}

__device__ float pattern(int64_t i, int64_t per, float value, bool by_chunk) {
  return by_chunk ? static_cast<float>(i / per + 1) : value;
}

__global__ void pattern_fill(__nv_bfloat16* y, int64_t n, int64_t per, float value, bool by_chunk) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(pattern(i, per, value, by_chunk));
}

__global__ void pattern_check(const __nv_bfloat16* y, int64_t n, int64_t per, float value, bool by_chunk,
                              unsigned long long* bad) {
  unsigned long long wrong = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    if (__bfloat162float(y[i]) != pattern(i, per, value, by_chunk)) ++wrong;
  if (wrong) atomicAdd(bad, wrong);
}

} // namespace

int launch_fp8_cast(Fp8CastMode mode, bool e5m2, const void* x, void* y, void* yt, int64_t rows, int64_t cols,
                    const float* scale, float* amax, void* stream) {
  const int64_t tiles = ((rows + kTile - 1) / kTile) * ((cols + kTile - 1) / kTile);
  cast_transpose<<<blocks_for(tiles, 1), dim3(kTile, kRowsPerPass), 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<int>(mode), e5m2, x, static_cast<uint8_t*>(y), static_cast<uint8_t*>(yt), rows, cols, scale, amax);
  return static_cast<int>(cudaGetLastError());
}

int launch_fp8_scale_update(const float* from, float* to, float* amax, float* scale, float* scale_inv, int64_t tensors,
                            int64_t len, float fp8_max, void* stream) {
  scale_update<<<blocks_for(tensors, 1), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      from, to, amax, scale, scale_inv, tensors, len, fp8_max);
  return static_cast<int>(cudaGetLastError());
}

int launch_fp8_fill(void* y, int64_t bytes, void* stream) {
  fp8_fill<<<blocks_for(bytes, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<uint8_t*>(y),
                                                                                            bytes);
  return static_cast<int>(cudaGetLastError());
}

int launch_pattern_fill(void* y, int64_t n, int64_t per, float value, bool by_chunk, void* stream) {
  pattern_fill<<<blocks_for(n, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<__nv_bfloat16*>(y), n, std::max<int64_t>(per, 1), value, by_chunk);
  return static_cast<int>(cudaGetLastError());
}

int launch_pattern_check(const void* y, int64_t n, int64_t per, float value, bool by_chunk, unsigned long long* bad,
                         void* stream) {
  pattern_check<<<blocks_for(n, kThreads), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const __nv_bfloat16*>(y), n, std::max<int64_t>(per, 1), value, by_chunk, bad);
  return static_cast<int>(cudaGetLastError());
}

} // namespace twinscale::backend::cuda
