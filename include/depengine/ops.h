#pragma once
/// \file ops.h
/// Tensor operations, each pushed asynchronously on the engine.
///
/// Every op runs on the device of its operands (all operands must share one
/// engine and one device): a CPU kernel on the CPU and on the emulated device,
/// a CUDA kernel or a cuBLAS call enqueued on the op's stream on CUDA. Each op
///  - checks shapes, dtypes and devices when it is pushed and throws
///    `std::invalid_argument` naming the op and the offending shapes, having
///    enqueued nothing;
///  - declares exactly what it reads and writes: inputs are read, outputs are
///    written, and an in-place op (`axpy`, `sgd_update`, `scale` with
///    `out == x`) writes its operand;
///  - returns its `Cost` (floating-point operations and bytes moved), known
///    at push time, for roofline plots.
///
/// Arithmetic ops take float32 or float64 operands of one dtype. `copy`
/// converts between any dtypes; `gemm` also takes float16/bfloat16 inputs
/// with a float32 output (float32 accumulation).
///
/// The forms that take an output write it; the short forms allocate the
/// output on the operands' device and return it.
///
/// \code
///   #include <depengine/ops.h>
///   namespace ops = depengine::ops;
///   using depengine::Tensor;
///
///   depengine::Engine engine;
///   Tensor a = Tensor::normal(engine, {64, 32}, 1), b = Tensor::normal(engine, {32, 16}, 2);
///   Tensor c = Tensor::empty(engine, {64, 16});
///   ops::Cost cost = ops::gemm(a, b, c);       // c = a b; cost.flops == 2*64*16*32
///   Tensor total = ops::sum(ops::relu(c));     // allocating forms
///   double s = total.item<double>();           // the blocker
/// \endcode

#include <cstdint>

#include "depengine/tensor.h"

namespace depengine::ops {

/// The work of one op, for rooflines: arithmetic intensity = flops / bytes.
struct Cost {
  double flops = 0;  ///< floating-point operations (a multiply-add counts 2)
  double bytes = 0;  ///< bytes read plus bytes written, each operand once
};

/// out[i] = value.
Cost fill(const Tensor& out, double value);
/// dst = src, the same element count. On one device it converts the dtype
/// if they differ; between devices (a copy operation of the copy streams,
/// as `Tensor::copy_to` pushes) the dtypes must match.
Cost copy(const Tensor& src, const Tensor& dst);

/// out = a + b (also sub, mul). `b`'s shape equals `a`'s or a suffix of it
/// (a bias row added to every row); `out` has `a`'s shape and may be `a`.
Cost add(const Tensor& a, const Tensor& b, const Tensor& out);
Cost sub(const Tensor& a, const Tensor& b, const Tensor& out);
Cost mul(const Tensor& a, const Tensor& b, const Tensor& out);
/// out = alpha x; `out` may be `x` (in place).
Cost scale(const Tensor& x, double alpha, const Tensor& out);
/// y += alpha x (in place on y).
Cost axpy(double alpha, const Tensor& x, const Tensor& y);
/// out = max(x, 0); `out` may be `x`.
Cost relu(const Tensor& x, const Tensor& out);
/// grad_in = grad_out where x > 0, else 0.
Cost relu_grad(const Tensor& x, const Tensor& grad_out, const Tensor& grad_in);

/// out (one element) = sum of all elements of x; 0 for an empty x.
Cost sum(const Tensor& x, const Tensor& out);
/// out = x summed along `axis`; out's shape is x's without that axis.
Cost sum(const Tensor& x, int axis, const Tensor& out);
/// Like sum, divided by the number of summed elements (NaN when there are none).
Cost mean(const Tensor& x, const Tensor& out);
Cost mean(const Tensor& x, int axis, const Tensor& out);

/// c = alpha op(a) op(b) + beta c for matrices, op(m) = m or its transpose.
/// a, b, c share a dtype (float32/float64), or a and b are float16/bfloat16
/// and c is float32 (mixed precision: float32 accumulation). OpenBLAS on the
/// CPU, cuBLAS on CUDA.
Cost gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a = false,
          bool trans_b = false, double alpha = 1.0, double beta = 0.0);

/// For logits [rows, classes] and int32 labels [rows]: loss (one element) =
/// mean over rows of -log softmax(logits)[label], and, unless `grad` is a null
/// Tensor, grad = (softmax(logits) - onehot(label)) / rows; with no rows the
/// loss is 0. A label outside [0, classes) makes the op fail on the CPU and
/// the emulated device (the error reaches the next blocker); on CUDA, where a
/// kernel cannot throw, it makes the loss NaN.
Cost softmax_cross_entropy(const Tensor& logits, const Tensor& labels, const Tensor& loss,
                           const Tensor& grad);

/// weight -= lr (grad + weight_decay weight), in place on weight.
Cost sgd_update(const Tensor& weight, const Tensor& grad, double lr, double weight_decay = 0.0);

// Allocating forms: the result lives on the operands' device.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double alpha);
Tensor relu(const Tensor& x);
Tensor sum(const Tensor& x);
Tensor sum(const Tensor& x, int axis);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, int axis);
/// op(a) op(b) as a new tensor (float32 for float16/bfloat16 inputs).
Tensor matmul(const Tensor& a, const Tensor& b, bool trans_a = false, bool trans_b = false);
/// The tensor converted to `dtype`.
Tensor cast(const Tensor& x, DType dtype);

}  // namespace depengine::ops
