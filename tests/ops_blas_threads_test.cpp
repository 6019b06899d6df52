// The threads OpenBLAS runs inside a CPU GEMM follow the engine's workers
// and the GEMM's size (ops/cpu/blas_threads.h): the cores are shared among
// the workers, and a small GEMM runs on one thread.

#include <gtest/gtest.h>
#include <cblas.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>

#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "ops/cpu/blas_threads.h"
#include "sync/usable_cores.h"
#include "tests/support/message_of.h"

namespace depengine {
namespace {

using ops::detail::blas_threads_for;
using ops::detail::kBlasFlopsPerThread;
using detail::usable_cores;

constexpr double kWholeMachine = 1e15;  // flops enough for any core count

// Runs one n x n x n GEMM on `engine` and returns OpenBLAS's thread count after it.
int blas_threads_after_a_gemm(Engine& engine, std::int64_t n = 8) {
  const Tensor a = Tensor::full(engine, {n, n}, 1.0), b = Tensor::full(engine, {n, n}, 2.0);
  const Tensor c = Tensor::empty(engine, {n, n});
  ops::gemm(a, b, c);
  engine.wait_to_read(c.var());
  EXPECT_EQ(c.to_host<float>()[0], 2.0f * static_cast<float>(n));
  return openblas_get_num_threads();
}

// The side of a square GEMM with work for `threads` BLAS threads.
std::int64_t side_for(int threads) {
  return static_cast<std::int64_t>(std::ceil(std::cbrt(threads * kBlasFlopsPerThread / 2)));
}

TEST(BlasThreads, TheCoresAreSharedAmongTheWorkers) {
  EXPECT_EQ(blas_threads_for(2, 2, kWholeMachine), 1);
  EXPECT_EQ(blas_threads_for(2, 1, kWholeMachine), 2);
  EXPECT_EQ(blas_threads_for(16, 4, kWholeMachine), 4);
  EXPECT_EQ(blas_threads_for(3, 2, kWholeMachine), 1);
  EXPECT_EQ(blas_threads_for(1, 8, kWholeMachine), 1);
  EXPECT_EQ(blas_threads_for(16, 0, kWholeMachine), 16);
}

TEST(BlasThreads, EachThreadGetsAtLeastItsShareOfTheWork) {
  EXPECT_EQ(blas_threads_for(2, 1, 0), 1);
  EXPECT_EQ(blas_threads_for(2, 1, 2 * kBlasFlopsPerThread - 1), 1);
  EXPECT_EQ(blas_threads_for(2, 1, 2 * kBlasFlopsPerThread), 2);
  EXPECT_EQ(blas_threads_for(16, 1, 5.5 * kBlasFlopsPerThread), 5);
  // The workers' share still caps it.
  EXPECT_EQ(blas_threads_for(16, 4, 5.5 * kBlasFlopsPerThread), 4);
  // The flops of the MLP's GEMMs (32 x 64 x 256) and of a 1024-cube.
  EXPECT_EQ(blas_threads_for(2, 1, 2.0 * 32 * 64 * 256), 1);
  EXPECT_EQ(blas_threads_for(2, 1, 2.0 * 1024 * 1024 * 1024), 2);
}

TEST(BlasThreads, AGemmRunsWithItsEnginesShareOfTheCores) {
  const int cores = usable_cores();
  const std::int64_t large = side_for(cores);
  Engine one_worker_per_core(EngineOptions{.cpu_threads = cores, .read_environment = false});
  EXPECT_EQ(blas_threads_after_a_gemm(one_worker_per_core, large), 1);
  // The naive engine runs every op on the pushing thread: one worker.
  Engine naive(EngineOptions{.kind = EngineKind::Naive, .read_environment = false});
  EXPECT_EQ(blas_threads_after_a_gemm(naive, large), cores);
  EXPECT_EQ(blas_threads_after_a_gemm(one_worker_per_core, large), 1);
}

TEST(BlasThreads, ASmallGemmRunsOnOneThread) {
  Engine naive(EngineOptions{.kind = EngineKind::Naive, .read_environment = false});
  EXPECT_EQ(blas_threads_after_a_gemm(naive, side_for(usable_cores())), usable_cores());
  EXPECT_EQ(blas_threads_after_a_gemm(naive, 64), 1);
  if (usable_cores() >= 2) EXPECT_EQ(blas_threads_after_a_gemm(naive, side_for(2)), 2);
}

TEST(BlasThreads, TheEnvironmentFixesTheCount) {
  Engine engine(EngineOptions{.cpu_threads = 2, .read_environment = false});
  ASSERT_EQ(setenv("DEPENGINE_BLAS_THREADS", "3", 1), 0);
  EXPECT_EQ(blas_threads_after_a_gemm(engine), 3);
  for (const char* bad : {"0", "-1", "two", "2x", "1025"}) {
    ASSERT_EQ(setenv("DEPENGINE_BLAS_THREADS", bad, 1), 0);
    const Tensor a = Tensor::full(engine, {2, 2}, 1.0), c = Tensor::zeros(engine, {2, 2});
    EXPECT_THROW(ops::gemm(a, a, c), std::invalid_argument);
    const std::string message = message_of([&] { ops::gemm(a, a, c); });
    EXPECT_NE(message.find("DEPENGINE_BLAS_THREADS"), std::string::npos) << message;
    EXPECT_NE(message.find(bad), std::string::npos) << message;
    // Nothing was pushed: c keeps its value.
    EXPECT_EQ(c.to_host<float>()[0], 0.0f);
  }
  ASSERT_EQ(unsetenv("DEPENGINE_BLAS_THREADS"), 0);
  EXPECT_EQ(blas_threads_after_a_gemm(engine, side_for(usable_cores())), blas_threads_for(usable_cores(), 2, kWholeMachine));
}

}  // namespace
}  // namespace depengine
