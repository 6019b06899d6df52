#pragma once
// Backend: what the tensor layer needs from one kind of device — memory,
// host/device copies and the kernels. The op files validate, declare
// reads/writes and push; inside the pushed function they call the backend of
// the device the op runs on. The CPU backend serves the CPU and the emulated
// device (whose memory is host memory); the CUDA backend enqueues on the
// op's stream and never synchronises.

#include <cstddef>
#include <cstdint>

#include "depengine/device.h"
#include "depengine/dtype.h"
#include "ops/binary_op.h"

namespace depengine::ops::detail {

/// c = alpha op(a) op(b) + beta c, row-major, c is m x n, the inner size k.
struct GemmArgs {
  bool trans_a = false, trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  double alpha = 1.0, beta = 0.0;
  DType in_dtype = DType::float32;   // a and b
  DType out_dtype = DType::float32;  // c
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  int blas_threads = 1;  // threads inside a CPU GEMM (ops/cpu/blas_threads.h)
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Memory. Zero bytes may give a null pointer.
  virtual void* allocate(Device device, std::size_t bytes) const = 0;
  virtual void deallocate(Device device, void* data, std::size_t bytes) const = 0;
  /// True when host<->device copies go through host staging buffers (pinned
  /// memory on CUDA), filled and drained by CPU operations.
  virtual bool needs_host_staging() const = 0;
  virtual void* allocate_staging(std::size_t bytes) const = 0;
  virtual void deallocate_staging(void* data, std::size_t bytes) const = 0;

  // Copies, enqueued on `stream` (null on the CPU).
  virtual void upload(Device device, void* dst, const void* host_src, std::size_t bytes,
                      void* stream) const = 0;
  virtual void download(Device device, void* host_dst, const void* src, std::size_t bytes,
                        void* stream) const = 0;
  /// Between two devices of this backend's kind (or within one).
  virtual void copy_peer(Device dst_device, void* dst, Device src_device, const void* src,
                         std::size_t bytes, void* stream) const = 0;

  // Kernels on n elements; arithmetic ones take float32 or float64.
  /// Sets n elements of `element_size` bytes (2, 4 or 8) to the low bytes of `bits`.
  virtual void fill(void* out, std::int64_t n, std::size_t element_size, std::uint64_t bits,
                    void* stream) const = 0;
  /// out = in converted from `from` to `to` (any dtypes).
  virtual void convert(DType from, const void* in, DType to, void* out, std::int64_t n,
                       void* stream) const = 0;
  /// out[i] = a[i] op b[i % nb].
  virtual void binary(BinaryOp op, DType t, const void* a, const void* b, std::int64_t nb,
                      void* out, std::int64_t n, void* stream) const = 0;
  /// out = alpha x (out may be x).
  virtual void scale(DType t, double alpha, const void* x, void* out, std::int64_t n,
                     void* stream) const = 0;
  /// y = alpha x + beta y.
  virtual void axpby(DType t, double alpha, const void* x, double beta, void* y, std::int64_t n,
                     void* stream) const = 0;
  virtual void relu(DType t, const void* x, void* out, std::int64_t n, void* stream) const = 0;
  virtual void relu_grad(DType t, const void* x, const void* grad_out, void* grad_in,
                         std::int64_t n, void* stream) const = 0;
  /// x seen as [outer, len, inner]: out[o, i] = scale * sum_j x[o, j, i].
  virtual void reduce_sum(DType t, const void* x, std::int64_t outer, std::int64_t len,
                          std::int64_t inner, double scale, void* out, void* stream) const = 0;
  virtual void gemm(const GemmArgs& args, void* stream) const = 0;
  /// loss[0] = mean_r -log softmax(logits[r])[labels[r]]; grad (if not null) =
  /// (softmax - onehot) / rows.
  virtual void softmax_cross_entropy(DType t, const void* logits, const std::int32_t* labels,
                                     std::int64_t rows, std::int64_t classes, void* loss,
                                     void* grad, void* stream) const = 0;
};

/// The backend of a device kind. Throws std::invalid_argument for CUDA in a
/// build without CUDA, and for kinds the tensor layer does not know.
const Backend& backend_for(Device device);

const Backend& cpu_backend();
#ifdef DEPENGINE_OPS_WITH_CUDA
const Backend& cuda_backend();
#endif

}  // namespace depengine::ops::detail
