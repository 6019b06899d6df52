// The CPU backend: plain loops and OpenBLAS, on host memory. It also serves
// the emulated device, whose operations run on host "stream" threads in
// stream order and whose memory is host memory.

#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "ops/backend.h"
#include "ops/cpu/blas_threads.h"
#include "ops/cpu/buffer_cache.h"
#include "ops/cpu/sums.h"
#include "ops/element_io.h"

namespace depengine::ops::detail {
namespace {

// Calls f with a typed null pointer naming the float type of `t`.
template <class F>
void with_float_type(DType t, F&& f) {
  if (t == DType::float64) {
    f(static_cast<double*>(nullptr));
  } else {
    f(static_cast<float*>(nullptr));
  }
}

// Widens float16/bfloat16 matrices to float32 for sgemm.
std::vector<float> widen(DType t, const void* p, std::int64_t n) {
  std::vector<float> out(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(load_as_double(t, p, i));
  return out;
}

class CpuBackend final : public Backend {
 public:
  void* allocate(Device, std::size_t bytes) const override { return cpu_buffer_cache().allocate(bytes); }
  void deallocate(Device, void* data, std::size_t bytes) const override {
    cpu_buffer_cache().deallocate(data, bytes);
  }
  bool needs_host_staging() const override { return false; }
  void* allocate_staging(std::size_t bytes) const override { return allocate(Device::cpu(), bytes); }
  void deallocate_staging(void* data, std::size_t bytes) const override {
    deallocate(Device::cpu(), data, bytes);
  }

  void upload(Device, void* dst, const void* src, std::size_t bytes, void*) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void download(Device, void* dst, const void* src, std::size_t bytes, void*) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }
  void copy_peer(Device, void* dst, Device, const void* src, std::size_t bytes,
                 void*) const override {
    if (bytes) std::memcpy(dst, src, bytes);
  }

  void fill(void* out, std::int64_t n, std::size_t element_size, std::uint64_t bits,
            void*) const override {
    switch (element_size) {
      case 2: std::fill_n(static_cast<std::uint16_t*>(out), n, static_cast<std::uint16_t>(bits)); break;
      case 4: std::fill_n(static_cast<std::uint32_t*>(out), n, static_cast<std::uint32_t>(bits)); break;
      default: std::fill_n(static_cast<std::uint64_t*>(out), n, bits); break;
    }
  }

  void convert(DType from, const void* in, DType to, void* out, std::int64_t n,
               void*) const override {
    if (from == to) {
      if (n) std::memcpy(out, in, static_cast<std::size_t>(n) * dtype_size(from));
      return;
    }
    for (std::int64_t i = 0; i < n; ++i) store_from_double(to, out, i, load_as_double(from, in, i));
  }

  void binary(BinaryOp op, DType t, const void* a, const void* b, std::int64_t nb, void* out,
              std::int64_t n, void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T* x = static_cast<const T*>(a);
      const T* y = static_cast<const T*>(b);
      T* z = static_cast<T*>(out);
      // Row by row so that the inner loop has no modulo and vectorises.
      for (std::int64_t row = 0; row < n; row += nb) {
        switch (op) {
          case BinaryOp::add: for (std::int64_t j = 0; j < nb; ++j) z[row + j] = x[row + j] + y[j]; break;
          case BinaryOp::sub: for (std::int64_t j = 0; j < nb; ++j) z[row + j] = x[row + j] - y[j]; break;
          case BinaryOp::mul: for (std::int64_t j = 0; j < nb; ++j) z[row + j] = x[row + j] * y[j]; break;
        }
      }
    });
  }

  void scale(DType t, double alpha, const void* x, void* out, std::int64_t n, void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T a = static_cast<T>(alpha);
      const T* in = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      for (std::int64_t i = 0; i < n; ++i) o[i] = a * in[i];
    });
  }

  void axpby(DType t, double alpha, const void* x, double beta, void* y, std::int64_t n,
             void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T a = static_cast<T>(alpha), b = static_cast<T>(beta);
      const T* in = static_cast<const T*>(x);
      T* o = static_cast<T*>(y);
      // axpy proper (beta = 1, what ops::axpy pushes) without the multiply
      // by one: the loop is as lean as the one a caller would write.
      if (b == T(1)) {
        for (std::int64_t i = 0; i < n; ++i) o[i] += a * in[i];
      } else {
        for (std::int64_t i = 0; i < n; ++i) o[i] = a * in[i] + b * o[i];
      }
    });
  }

  void relu(DType t, const void* x, void* out, std::int64_t n, void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T* in = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      for (std::int64_t i = 0; i < n; ++i) o[i] = in[i] > T(0) ? in[i] : T(0);
    });
  }

  void relu_grad(DType t, const void* x, const void* grad_out, void* grad_in, std::int64_t n,
                 void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T* in = static_cast<const T*>(x);
      const T* dy = static_cast<const T*>(grad_out);
      T* dx = static_cast<T*>(grad_in);
      // dy is loaded whatever the sign of x: a load under the condition keeps
      // the loop scalar, and random signs make its branch mispredict half the time.
      for (std::int64_t i = 0; i < n; ++i) {
        const T g = dy[i];
        dx[i] = in[i] > T(0) ? g : T(0);
      }
    });
  }

  void reduce_sum(DType t, const void* x, std::int64_t outer, std::int64_t len,
                  std::int64_t inner, double scale, void* out, void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T* in = static_cast<const T*>(x);
      T* o = static_cast<T*>(out);
      if (inner == 1) {
        for (std::int64_t a = 0; a < outer; ++a) o[a] = static_cast<T>(scale * contiguous_sum(in + a * len, len));
      } else {
        for (std::int64_t a = 0; a < outer; ++a) strided_sums(in + a * len * inner, len, inner, scale, o + a * inner);
      }
    });
  }

  void gemm(const GemmArgs& g, void*) const override {
    if (g.m == 0 || g.n == 0) return;
    const auto ta = g.trans_a ? CblasTrans : CblasNoTrans;
    const auto tb = g.trans_b ? CblasTrans : CblasNoTrans;
    // Leading dimensions of the stored (untransposed) row-major matrices;
    // BLAS wants at least 1 even for empty ones.
    const auto lda = static_cast<blasint>(std::max<std::int64_t>(1, g.trans_a ? g.m : g.k));
    const auto ldb = static_cast<blasint>(std::max<std::int64_t>(1, g.trans_b ? g.k : g.n));
    const auto ldc = static_cast<blasint>(std::max<std::int64_t>(1, g.n));
    const auto m = static_cast<blasint>(g.m), n = static_cast<blasint>(g.n), k = static_cast<blasint>(g.k);
    use_blas_threads(g.blas_threads);
    if (g.in_dtype == DType::float64) {
      cblas_dgemm(CblasRowMajor, ta, tb, m, n, k, g.alpha, static_cast<const double*>(g.a), lda,
                  static_cast<const double*>(g.b), ldb, g.beta, static_cast<double*>(g.c), ldc);
    } else if (g.in_dtype == DType::float32) {
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(g.alpha),
                  static_cast<const float*>(g.a), lda, static_cast<const float*>(g.b), ldb,
                  static_cast<float>(g.beta), static_cast<float*>(g.c), ldc);
    } else {
      // float16/bfloat16 inputs: widening to float32 is exact, so this matches
      // a float32-accumulating tensor-core GEMM up to summation order.
      const std::vector<float> a = widen(g.in_dtype, g.a, g.m * g.k);
      const std::vector<float> b = widen(g.in_dtype, g.b, g.k * g.n);
      cblas_sgemm(CblasRowMajor, ta, tb, m, n, k, static_cast<float>(g.alpha), a.data(), lda,
                  b.data(), ldb, static_cast<float>(g.beta), static_cast<float*>(g.c), ldc);
    }
  }

  void softmax_cross_entropy(DType t, const void* logits, const std::int32_t* labels,
                             std::int64_t rows, std::int64_t classes, void* loss, void* grad,
                             void*) const override {
    with_float_type(t, [&]<class T>(T*) {
      const T* z = static_cast<const T*>(logits);
      T* g = static_cast<T*>(grad);
      double total = 0;
      for (std::int64_t r = 0; r < rows; ++r) {
        const std::int32_t label = labels[r];
        if (label < 0 || label >= classes) {
          throw std::out_of_range("ops::softmax_cross_entropy: label " + std::to_string(label) +
                                  " in row " + std::to_string(r) + " is outside [0, " +
                                  std::to_string(classes) + ")");
        }
        const T* row = z + r * classes;
        // Subtract the row maximum so that exp cannot overflow.
        const double mx = *std::max_element(row, row + classes);
        double denom = 0;
        for (std::int64_t c = 0; c < classes; ++c) denom += std::exp(row[c] - mx);
        const double log_denom = std::log(denom);
        total += log_denom - (row[label] - mx);
        if (g) {
          for (std::int64_t c = 0; c < classes; ++c) {
            const double p = std::exp(row[c] - mx - log_denom);
            g[r * classes + c] = static_cast<T>((p - (c == label ? 1.0 : 0.0)) / rows);
          }
        }
      }
      static_cast<T*>(loss)[0] = static_cast<T>(rows ? total / rows : 0.0);
    });
  }
};

}  // namespace

const Backend& cpu_backend() {
  static const CpuBackend backend;
  return backend;
}

}  // namespace depengine::ops::detail
