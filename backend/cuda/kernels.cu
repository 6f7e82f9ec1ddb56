// Memory-bound kernels of the CUDA device. Simple grid-stride kernels: their cost is
// dominated by HBM traffic and launch overhead, which is what the schedule's elementwise
// ops stand for (hardware.md: "limited by HBM bandwidth and launch overhead").
#include "backend/cuda/kernels.hpp"

#include <algorithm>

#include <cuda_bf16.h>
#include <cuda_runtime.h>

namespace twinscale::backend::cuda {

namespace {

constexpr int kThreads = 256;

int blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<int>(std::min<int64_t>(std::max<int64_t>(b, 1), 65535));
}

__device__ float gelu(float x) { return 0.5f * x * (1.0f + tanhf(0.7978845608f * (x + 0.044715f * x * x * x))); }

__global__ void pointwise(int mode, const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = __bfloat162float(x[i]);
    float out = v;
    switch (mode) {
    case 0: out = v + 0.1f; break;                                               // bias add / affine
    case 1: out = gelu(v); break;                                                // GeLU
    case 2: out = gelu(v + 0.1f); break;                                         // fused bias + GeLU
    case 3: out = ((i * 2654435761ull) >> 7) % 10 == 0 ? 0.0f : v / 0.9f; break; // dropout
    case 4: out = v + __bfloat162float(y[i]); break;                             // residual add
    case 5: out = __bfloat162float(x[(i * 2654435761ull) % n]); break;           // embedding gather
    }
    y[i] = __float2bfloat16(out);
  }
}

// One block per row: mean and variance by block reduction; stage 0 writes statistics
// only (the unfused form's first kernel), stage 1 also normalises.
__global__ void row_norm(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n, int64_t row, int stage) {
  __shared__ float s_sum[kThreads], s_sq[kThreads];
  for (int64_t r = blockIdx.x; r * row < n; r += gridDim.x) {
    const int64_t base = r * row, len = min(row, n - base);
    float sum = 0, sq = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
      const float v = __bfloat162float(x[base + j]);
      sum += v;
      sq += v * v;
    }
    s_sum[threadIdx.x] = sum;
    s_sq[threadIdx.x] = sq;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) {
        s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
        s_sq[threadIdx.x] += s_sq[threadIdx.x + s];
      }
      __syncthreads();
    }
    const float mean = s_sum[0] / len, var = s_sq[0] / len - mean * mean;
    if (stage == 0) {
      if (threadIdx.x == 0) y[base] = __float2bfloat16(mean + var);
    } else {
      for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
        y[base + j] = __float2bfloat16((__bfloat162float(x[base + j]) - mean) * rsqrtf(var + 1e-5f));
    }
    __syncthreads();
  }
}

// One block per row: log-sum-exp minus the target logit (cross-entropy of a shard).
__global__ void row_logsumexp(const __nv_bfloat16* x, __nv_bfloat16* y, int64_t n, int64_t row) {
  __shared__ float s_max[kThreads], s_sum[kThreads];
  for (int64_t r = blockIdx.x; r * row < n; r += gridDim.x) {
    const int64_t base = r * row, len = min(row, n - base);
    float mx = -INFINITY;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) mx = fmaxf(mx, __bfloat162float(x[base + j]));
    s_max[threadIdx.x] = mx;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) s_max[threadIdx.x] = fmaxf(s_max[threadIdx.x], s_max[threadIdx.x + s]);
      __syncthreads();
    }
    mx = s_max[0];
    float sum = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) sum += __expf(__bfloat162float(x[base + j]) - mx);
    s_sum[threadIdx.x] = sum;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s /= 2) {
      if (threadIdx.x < s) s_sum[threadIdx.x] += s_sum[threadIdx.x + s];
      __syncthreads();
    }
    if (threadIdx.x == 0) y[r] = __float2bfloat16(mx + logf(s_sum[0]) - __bfloat162float(x[base]));
    __syncthreads();
  }
}

__global__ void softmax_rows(__nv_bfloat16* s, int64_t rows, int64_t cols, int64_t window) {
  __shared__ float s_red[kThreads];
  for (int64_t r = blockIdx.x; r < rows; r += gridDim.x) {
    __nv_bfloat16* row = s + r * cols;
    const int64_t i = r % cols; // query index inside its head
    const int64_t lo = window > 0 ? max(static_cast<int64_t>(0), i - window + 1) : 0;
    float mx = -INFINITY;
    for (int64_t j = lo + threadIdx.x; j <= i; j += blockDim.x) mx = fmaxf(mx, __bfloat162float(row[j]));
    s_red[threadIdx.x] = mx;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) s_red[threadIdx.x] = fmaxf(s_red[threadIdx.x], s_red[threadIdx.x + k]);
      __syncthreads();
    }
    mx = s_red[0];
    __syncthreads();
    float sum = 0;
    for (int64_t j = lo + threadIdx.x; j <= i; j += blockDim.x) sum += __expf(__bfloat162float(row[j]) - mx);
    s_red[threadIdx.x] = sum;
    __syncthreads();
    for (int k = blockDim.x / 2; k > 0; k /= 2) {
      if (threadIdx.x < k) s_red[threadIdx.x] += s_red[threadIdx.x + k];
      __syncthreads();
    }
    const float inv = 1.0f / s_red[0];
    for (int64_t j = threadIdx.x; j < cols; j += blockDim.x)
      row[j] = __float2bfloat16(j >= lo && j <= i ? __expf(__bfloat162float(row[j]) - mx) * inv : 0.0f);
    __syncthreads();
  }
}

__global__ void optimizer_step(bool lamb, float* p, const float* g, float* m, float* v, int64_t n) {
  const float lr = 1e-4f, b1 = 0.9f, b2 = 0.95f, eps = 1e-8f;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    m[i] = b1 * m[i] + (1 - b1) * g[i];
    v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
    float u = m[i] / (sqrtf(v[i]) + eps);
    if (lamb) u *= fminf(1.0f, fabsf(p[i]) / (fabsf(u) + eps)); // element-wise trust bound
    p[i] -= lr * u;
  }
}

__global__ void fill(__nv_bfloat16* y, int64_t n, float scale) {
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    y[i] = __float2bfloat16(scale * (static_cast<float>((i * 2654435761ull) % 1000) / 1000.0f - 0.5f));
}

} // namespace

int launch_elementwise(ElementwiseMode mode, const void* xv, void* yv, int64_t n, int64_t row, void* stream_v) {
  auto* x = static_cast<const __nv_bfloat16*>(xv);
  auto* y = static_cast<__nv_bfloat16*>(yv);
  auto stream = static_cast<cudaStream_t>(stream_v);
  const int blocks = blocks_for(n);
  row = row > 0 ? row : 1024;
  const int row_blocks = static_cast<int>(std::min<int64_t>(std::max<int64_t>((n + row - 1) / row, 1), 65535));
  switch (mode) {
  case ElementwiseMode::LayerNorm: row_norm<<<row_blocks, kThreads, 0, stream>>>(x, y, n, row, 1); break;
  case ElementwiseMode::LayerNormUnfused:
    row_norm<<<row_blocks, kThreads, 0, stream>>>(x, y, n, row, 0);
    row_norm<<<row_blocks, kThreads, 0, stream>>>(x, y, n, row, 1);
    pointwise<<<blocks, kThreads, 0, stream>>>(0, y, y, n);
    break;
  case ElementwiseMode::Gelu:
    pointwise<<<blocks, kThreads, 0, stream>>>(0, x, y, n);
    pointwise<<<blocks, kThreads, 0, stream>>>(1, y, y, n);
    break;
  case ElementwiseMode::FusedBiasGelu: pointwise<<<blocks, kThreads, 0, stream>>>(2, x, y, n); break;
  case ElementwiseMode::Dropout: pointwise<<<blocks, kThreads, 0, stream>>>(3, x, y, n); break;
  case ElementwiseMode::ResidualAdd: pointwise<<<blocks, kThreads, 0, stream>>>(4, x, y, n); break;
  case ElementwiseMode::Embedding: pointwise<<<blocks, kThreads, 0, stream>>>(5, x, y, n); break;
  case ElementwiseMode::CrossEntropy: row_logsumexp<<<row_blocks, kThreads, 0, stream>>>(x, y, n, row); break;
  }
  return static_cast<int>(cudaGetLastError());
}

int launch_softmax(void* scores, int64_t rows, int64_t cols, int64_t window, void* stream) {
  const int blocks = static_cast<int>(std::min<int64_t>(std::max<int64_t>(rows, 1), 65535));
  softmax_rows<<<blocks, kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<__nv_bfloat16*>(scores), rows,
                                                                           cols, window);
  return static_cast<int>(cudaGetLastError());
}

int launch_optimizer(bool lamb, float* p, const float* g, float* m, float* v, int64_t n, void* stream) {
  optimizer_step<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(lamb, p, g, m, v, n);
  return static_cast<int>(cudaGetLastError());
}

int launch_fill(void* y, int64_t n, float scale, void* stream) {
  fill<<<blocks_for(n), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<__nv_bfloat16*>(y), n, scale);
  return static_cast<int>(cudaGetLastError());
}

} // namespace twinscale::backend::cuda
