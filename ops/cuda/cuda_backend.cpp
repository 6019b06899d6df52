// The CUDA backend: memory from the devices' caching allocator
// (depengine/cuda_memory.h), copies with cudaMemcpyAsync, kernels from
// ops/cuda/*.cu and gemm through cuBLAS — all enqueued on the op's stream,
// never synchronising (the engine learns of completion from the stream).

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

#include "depengine/cuda_memory.h"
#include "ops/backend.h"
#include "ops/cuda/kernels.h"

namespace depengine::ops::detail {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) {
    throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(s));
  }
}

cudaStream_t as_stream(void* stream) { return static_cast<cudaStream_t>(stream); }

// One cuBLAS handle per thread and GPU: a handle must not be used by two
// threads at once, and ops run on several host threads.
class CublasHandles {
 public:
  ~CublasHandles() {
    for (cublasHandle_t h : handles_) {
      if (h) cublasDestroy(h);
    }
  }
  cublasHandle_t for_current_device() {
    int device = 0;
    check(cudaGetDevice(&device), "cudaGetDevice");
    if (device < 0 || device >= static_cast<int>(handles_.size())) throw std::runtime_error("cuBLAS: GPU index out of range");
    if (!handles_[device]) check(cublasCreate(&handles_[device]), "cublasCreate");
    return handles_[device];
  }

 private:
  std::array<cublasHandle_t, 64> handles_{};
};

cudaDataType_t cuda_type(DType t) {
  switch (t) {
    case DType::float64: return CUDA_R_64F;
    case DType::float16: return CUDA_R_16F;
    case DType::bfloat16: return CUDA_R_16BF;
    default: return CUDA_R_32F;
  }
}

class CudaBackend final : public Backend {
 public:
  void* allocate(Device device, std::size_t bytes) const override {
    return bytes == 0 ? nullptr : cuda_alloc(device.index, bytes);
  }
  void deallocate(Device device, void* data, std::size_t bytes) const override {
    if (data) cuda_free(device.index, data, bytes);
  }
  bool needs_host_staging() const override { return true; }
  void* allocate_staging(std::size_t bytes) const override {
    return bytes == 0 ? nullptr : cuda_pinned_alloc(bytes);
  }
  void deallocate_staging(void* data, std::size_t bytes) const override {
    if (data) cuda_pinned_free(data, bytes);
  }

  void upload(Device, void* dst, const void* src, std::size_t bytes, void* stream) const override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, as_stream(stream)), "upload");
  }
  void download(Device, void* dst, const void* src, std::size_t bytes, void* stream) const override {
    if (bytes) check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, as_stream(stream)), "download");
  }
  void copy_peer(Device dst_device, void* dst, Device src_device, const void* src, std::size_t bytes,
                 void* stream) const override {
    if (!bytes) return;
    if (dst_device == src_device) {
      check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, as_stream(stream)), "copy");
    } else {
      check(cudaMemcpyPeerAsync(dst, dst_device.index, src, src_device.index, bytes, as_stream(stream)),
            "peer copy");
    }
  }

  void fill(void* out, std::int64_t n, std::size_t size, std::uint64_t bits, void* stream) const override {
    cuda::launch_fill(out, n, size, bits, as_stream(stream));
  }
  void convert(DType from, const void* in, DType to, void* out, std::int64_t n, void* stream) const override {
    if (from == to) {
      if (n) check(cudaMemcpyAsync(out, in, n * dtype_size(from), cudaMemcpyDeviceToDevice, as_stream(stream)), "copy");
      return;
    }
    cuda::launch_convert(from, in, to, out, n, as_stream(stream));
  }
  void binary(BinaryOp op, DType t, const void* a, const void* b, std::int64_t nb, void* out, std::int64_t n,
              void* stream) const override {
    cuda::launch_binary(op, t, a, b, nb, out, n, as_stream(stream));
  }
  void scale(DType t, double alpha, const void* x, void* out, std::int64_t n, void* stream) const override {
    cuda::launch_scale(t, alpha, x, out, n, as_stream(stream));
  }
  void axpby(DType t, double alpha, const void* x, double beta, void* y, std::int64_t n, void* stream) const override {
    cuda::launch_axpby(t, alpha, x, beta, y, n, as_stream(stream));
  }
  void relu(DType t, const void* x, void* out, std::int64_t n, void* stream) const override {
    cuda::launch_relu(t, x, out, n, as_stream(stream));
  }
  void relu_grad(DType t, const void* x, const void* dy, void* dx, std::int64_t n, void* stream) const override {
    cuda::launch_relu_grad(t, x, dy, dx, n, as_stream(stream));
  }
  void reduce_sum(DType t, const void* x, std::int64_t outer, std::int64_t len, std::int64_t inner, double scale,
                  void* out, void* stream) const override {
    cuda::launch_reduce_sum(t, x, outer, len, inner, scale, out, as_stream(stream));
  }
  void softmax_cross_entropy(DType t, const void* logits, const std::int32_t* labels, std::int64_t rows,
                             std::int64_t classes, void* loss, void* grad, void* stream) const override {
    cuda::launch_softmax_cross_entropy(t, logits, labels, rows, classes, loss, grad, as_stream(stream));
  }

  void gemm(const GemmArgs& g, void* stream) const override {
    if (g.m == 0 || g.n == 0) return;
    thread_local CublasHandles handles;
    cublasHandle_t h = handles.for_current_device();
    check(cublasSetStream(h, as_stream(stream)), "cublasSetStream");
    // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap
    // the operands and the m/n roles, keep the transposes.
    const auto op_a = g.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const auto op_b = g.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int lda = static_cast<int>(std::max<std::int64_t>(1, g.trans_a ? g.m : g.k));
    const int ldb = static_cast<int>(std::max<std::int64_t>(1, g.trans_b ? g.k : g.n));
    const int ldc = static_cast<int>(std::max<std::int64_t>(1, g.n));
    const int m = static_cast<int>(g.m), n = static_cast<int>(g.n), k = static_cast<int>(g.k);
    if (g.in_dtype == DType::float64) {
      check(cublasGemmEx(h, op_b, op_a, n, m, k, &g.alpha, g.b, CUDA_R_64F, ldb, g.a, CUDA_R_64F, lda, &g.beta,
                         g.c, CUDA_R_64F, ldc, CUBLAS_COMPUTE_64F, CUBLAS_GEMM_DEFAULT),
            "cublasGemmEx");
      return;
    }
    // float32, or float16/bfloat16 inputs with float32 accumulation and output.
    const float alpha = static_cast<float>(g.alpha), beta = static_cast<float>(g.beta);
    const cudaDataType_t in = cuda_type(g.in_dtype);
    check(cublasGemmEx(h, op_b, op_a, n, m, k, &alpha, g.b, in, ldb, g.a, in, lda, &beta, g.c, CUDA_R_32F, ldc,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
  }
};

}  // namespace

const Backend& cuda_backend() {
  static const CudaBackend backend;
  return backend;
}

}  // namespace depengine::ops::detail
