// Elementwise CUDA kernels: grid-stride loops over n elements, one template
// per element type.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>
#include <string>

#include "ops/cuda/kernels.h"

namespace depengine::ops::detail::cuda {
namespace {

constexpr int kThreads = 256;

int blocks_for(std::int64_t n) {
  const std::int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<int>(blocks < 65535 ? blocks : 65535);  // grid-stride covers the rest
}

#define GRID_STRIDE(i, n) \
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < (n); i += std::int64_t(blockDim.x) * gridDim.x)

template <class T>
__global__ void fill_kernel(T* out, std::int64_t n, T value) {
  GRID_STRIDE(i, n) out[i] = value;
}

// Element i of any dtype as a double, and back. Narrow types go through
// float with round-to-nearest-even, as the host conversions (ops/half.h) do.
__device__ double load(DType t, const void* p, std::int64_t i) {
  switch (t) {
    case DType::float32: return static_cast<const float*>(p)[i];
    case DType::float64: return static_cast<const double*>(p)[i];
    case DType::float16: return __half2float(static_cast<const __half*>(p)[i]);
    case DType::bfloat16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case DType::int32: return static_cast<const std::int32_t*>(p)[i];
  }
  return 0;
}

__device__ void store(DType t, void* p, std::int64_t i, double v) {
  switch (t) {
    case DType::float32: static_cast<float*>(p)[i] = static_cast<float>(v); break;
    case DType::float64: static_cast<double*>(p)[i] = v; break;
    case DType::float16: static_cast<__half*>(p)[i] = __float2half_rn(static_cast<float>(v)); break;
    case DType::bfloat16:
      static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(static_cast<float>(v));
      break;
    case DType::int32: static_cast<std::int32_t*>(p)[i] = static_cast<std::int32_t>(v); break;
  }
}

__global__ void convert_kernel(DType from, const void* in, DType to, void* out, std::int64_t n) {
  GRID_STRIDE(i, n) store(to, out, i, load(from, in, i));
}

template <class T>
__global__ void binary_kernel(BinaryOp op, const T* a, const T* b, std::int64_t nb, T* out, std::int64_t n) {
  GRID_STRIDE(i, n) {
    const T x = a[i], y = b[i % nb];
    out[i] = op == BinaryOp::add ? x + y : op == BinaryOp::sub ? x - y : x * y;
  }
}

template <class T>
__global__ void axpby_kernel(T alpha, const T* x, T beta, T* y, std::int64_t n) {
  GRID_STRIDE(i, n) y[i] = alpha * x[i] + beta * y[i];
}

template <class T>
__global__ void scale_kernel(T alpha, const T* x, T* out, std::int64_t n) {
  GRID_STRIDE(i, n) out[i] = alpha * x[i];
}

template <class T>
__global__ void relu_kernel(const T* x, T* out, std::int64_t n) {
  GRID_STRIDE(i, n) out[i] = x[i] > T(0) ? x[i] : T(0);
}

template <class T>
__global__ void relu_grad_kernel(const T* x, const T* dy, T* dx, std::int64_t n) {
  GRID_STRIDE(i, n) dx[i] = x[i] > T(0) ? dy[i] : T(0);
}

// Calls f with a value of the element type, float or double (nvcc builds
// this file as C++17: no template lambdas).
template <class F>
void with_float_type(DType t, F&& f) {
  if (t == DType::float64) {
    f(0.0);
  } else {
    f(0.0f);
  }
}

}  // namespace

void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw std::runtime_error(std::string("CUDA kernel ") + what + ": " + cudaGetErrorString(e));
}

void launch_fill(void* out, std::int64_t n, std::size_t element_size, std::uint64_t bits, cudaStream_t s) {
  if (n == 0) return;
  switch (element_size) {
    case 2: fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<std::uint16_t*>(out), n, static_cast<std::uint16_t>(bits)); break;
    case 4: fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<std::uint32_t*>(out), n, static_cast<std::uint32_t>(bits)); break;
    default: fill_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<std::uint64_t*>(out), n, bits); break;
  }
  check_launch("fill");
}

void launch_convert(DType from, const void* in, DType to, void* out, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  convert_kernel<<<blocks_for(n), kThreads, 0, s>>>(from, in, to, out, n);
  check_launch("convert");
}

void launch_binary(BinaryOp op, DType t, const void* a, const void* b, std::int64_t nb, void* out,
                   std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_float_type(t, [&](auto tag) {
    using T = decltype(tag);
    binary_kernel<<<blocks_for(n), kThreads, 0, s>>>(op, static_cast<const T*>(a), static_cast<const T*>(b), nb,
                                                    static_cast<T*>(out), n);
  });
  check_launch("binary");
}

void launch_axpby(DType t, double alpha, const void* x, double beta, void* y, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_float_type(t, [&](auto tag) {
    using T = decltype(tag);
    axpby_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<T>(alpha), static_cast<const T*>(x),
                                                   static_cast<T>(beta), static_cast<T*>(y), n);
  });
  check_launch("axpby");
}

void launch_scale(DType t, double alpha, const void* x, void* out, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_float_type(t, [&](auto tag) {
    using T = decltype(tag);
    scale_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<T>(alpha), static_cast<const T*>(x),
                                                   static_cast<T*>(out), n);
  });
  check_launch("scale");
}

void launch_relu(DType t, const void* x, void* out, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_float_type(t, [&](auto tag) {
    using T = decltype(tag);
    relu_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<T*>(out), n);
  });
  check_launch("relu");
}

void launch_relu_grad(DType t, const void* x, const void* dy, void* dx, std::int64_t n, cudaStream_t s) {
  if (n == 0) return;
  with_float_type(t, [&](auto tag) {
    using T = decltype(tag);
    relu_grad_kernel<<<blocks_for(n), kThreads, 0, s>>>(static_cast<const T*>(x), static_cast<const T*>(dy),
                                                       static_cast<T*>(dx), n);
  });
  check_launch("relu_grad");
}

}  // namespace depengine::ops::detail::cuda
