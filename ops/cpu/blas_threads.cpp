#include "ops/cpu/blas_threads.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#include "sync/environment.h"
#include "sync/usable_cores.h"

namespace depengine::ops::detail {
namespace {

constexpr int kMaxBlasThreads = 1024;

// 0 when unset; throws for anything but an integer in [1, kMaxBlasThreads].
int blas_threads_from_environment() {
  return static_cast<int>(depengine::detail::integer_from_environment("DEPENGINE_BLAS_THREADS", 0, 1, kMaxBlasThreads));
}

}  // namespace

int blas_threads_for(int cores, int cpu_workers, double flops) {
  const int share = std::max(1, std::max(cores, 1) / std::max(cpu_workers, 1));
  // Compared as doubles: a GEMM's flops may exceed any int.
  return flops >= share * kBlasFlopsPerThread ? share : std::max(1, static_cast<int>(flops / kBlasFlopsPerThread));
}

int blas_threads_for_engine(int cpu_workers, double flops) {
  if (const int fixed = blas_threads_from_environment()) return fixed;
  static const int cores = depengine::detail::usable_cores();
  return blas_threads_for(cores, cpu_workers, flops);
}

void use_blas_threads(int threads) {
  // OpenBLAS's own count, not a copy of it: the program may set it too.
  if (openblas_get_num_threads() == threads) return;
  static std::mutex changing;
  std::lock_guard lock(changing);
  if (openblas_get_num_threads() != threads) openblas_set_num_threads(threads);
}

}  // namespace depengine::ops::detail
