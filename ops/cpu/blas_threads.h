// How many threads OpenBLAS runs inside one CPU GEMM: the cores the process
// may use, shared among the engine's CPU workers (as MXNet sizes OpenMP
// teams), so that workers running GEMMs side by side do not oversubscribe
// the cores; and no more than the GEMM has work for. A BLAS thread is
// handed its part and wakes for it, which costs more than a small GEMM
// gains: on the 2-core development VM a second thread made a GEMM of 1-8
// MFLOP 10-40% slower, and one of 12 MFLOP or more 1.7-2× faster (and
// after the GEMM OpenBLAS's threads spin for a while on the cores the
// engine's frontend and workers need). DEPENGINE_BLAS_THREADS fixes the
// number instead.

#pragma once

namespace depengine::ops::detail {

// The floating-point operations of a GEMM each BLAS thread gets at least.
inline constexpr double kBlasFlopsPerThread = 6e6;

// max(1, cores / cpu_workers), and at most flops / kBlasFlopsPerThread
// (at least 1).
int blas_threads_for(int cores, int cpu_workers, double flops);

// The thread count for a GEMM of `flops` pushed to an engine with
// `cpu_workers` workers: DEPENGINE_BLAS_THREADS when set, else
// blas_threads_for(usable cores, cpu_workers, flops). A bad
// DEPENGINE_BLAS_THREADS throws std::invalid_argument.
int blas_threads_for_engine(int cpu_workers, double flops);

// Makes OpenBLAS use `threads` threads from its next call on. OpenBLAS's
// setting is process-wide: it is changed only when it differs (whoever set
// it last), under a lock.
void use_blas_threads(int threads);

}  // namespace depengine::ops::detail
