// How many threads OpenBLAS runs inside one CPU GEMM: the cores the process
// may use, shared among the engine's CPU workers (as MXNet sizes OpenMP
// teams), so that workers running GEMMs side by side do not oversubscribe
// the cores. DEPENGINE_BLAS_THREADS fixes the number instead.

#pragma once

namespace depengine::ops::detail {

// max(1, cores / cpu_workers).
int blas_threads_for(int cores, int cpu_workers);

// The thread count for a GEMM pushed to an engine with `cpu_workers`
// workers: DEPENGINE_BLAS_THREADS when set, else blas_threads_for(usable
// cores, cpu_workers). A bad DEPENGINE_BLAS_THREADS throws
// std::invalid_argument.
int blas_threads_for_engine(int cpu_workers);

// Makes OpenBLAS use `threads` threads from its next call on. OpenBLAS's
// setting is process-wide: it is changed only when it differs (whoever set
// it last), under a lock.
void use_blas_threads(int threads);

}  // namespace depengine::ops::detail
