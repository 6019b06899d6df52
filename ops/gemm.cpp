// gemm: c = alpha op(a) op(b) + beta c, through OpenBLAS or cuBLAS.

#include "depengine/ops.h"
#include "ops/cpu/blas_threads.h"
#include "ops/op_support.h"

namespace depengine::ops {

using detail::fail;

namespace {

bool is_half_precision(DType t) { return t == DType::float16 || t == DType::bfloat16; }

}  // namespace

Cost gemm(const Tensor& a, const Tensor& b, const Tensor& c, bool trans_a, bool trans_b,
          double alpha, double beta) {
  detail::require_placed_together("gemm", {&a, &b, &c});
  if (a.rank() != 2 || b.rank() != 2 || c.rank() != 2) {
    fail("gemm", "needs matrices, got " + a.describe() + ", " + b.describe() + ", " + c.describe());
  }
  if (a.dtype() != b.dtype()) {
    fail("gemm", "a and b have different dtypes: " + a.describe() + " and " + b.describe());
  }
  if (is_half_precision(a.dtype())) {
    if (c.dtype() != DType::float32) {
      fail("gemm", std::string(dtype_name(a.dtype())) + " inputs need a float32 c, got " + c.describe());
    }
  } else {
    detail::require_float_dtype("gemm", {&a, &b, &c});
  }
  const std::int64_t m = trans_a ? a.shape()[1] : a.shape()[0];
  const std::int64_t k = trans_a ? a.shape()[0] : a.shape()[1];
  const std::int64_t kb = trans_b ? b.shape()[1] : b.shape()[0];
  const std::int64_t n = trans_b ? b.shape()[0] : b.shape()[1];
  if (k != kb) {
    fail("gemm", "inner dimensions differ: op(a) is " + shape_to_string({m, k}) + ", op(b) is " +
                     shape_to_string({kb, n}));
  }
  detail::require_shape("gemm", "c", c, {m, n});
  if (a.var() == c.var() || b.var() == c.var()) fail("gemm", "c must not share storage with a or b");

  const double flops = 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  detail::GemmArgs args{.trans_a = trans_a, .trans_b = trans_b, .m = m, .n = n, .k = k,
                        .alpha = alpha, .beta = beta, .in_dtype = a.dtype(), .out_dtype = c.dtype(),
                        .blas_threads = detail::blas_threads_for_engine(c.engine().cpu_threads(), flops)};
  const auto& backend = detail::backend_for(c.device());
  // c is written (and also read when beta != 0: a write already orders that).
  detail::push_op("gemm", c.engine(), c.device(), detail::Access().read(a).read(b).write(c),
                  [&backend, args, pa = detail::Memory(a), pb = detail::Memory(b),
                   pc = detail::Memory(c)](RunContext& ctx) mutable {
                    args.a = pa.get();
                    args.b = pb.get();
                    args.c = pc.get();
                    backend.gemm(args, ctx.stream);
                  });
  const double c_bytes = detail::bytes_of(m * n, c.dtype()) * (beta != 0.0 ? 2 : 1);
  return {flops, detail::bytes_of(m * k + k * n, a.dtype()) + c_bytes};
}

}  // namespace depengine::ops
