// The threads OpenBLAS runs inside a CPU GEMM follow the engine's workers
// (ops/cpu/blas_threads.h): the cores are shared among the workers.

#include <gtest/gtest.h>
#include <cblas.h>

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
using detail::usable_cores;

// Runs one small GEMM on `engine` and returns OpenBLAS's thread count after it.
int blas_threads_after_a_gemm(Engine& engine) {
  const Tensor a = Tensor::full(engine, {8, 8}, 1.0), b = Tensor::full(engine, {8, 8}, 2.0);
  const Tensor c = Tensor::empty(engine, {8, 8});
  ops::gemm(a, b, c);
  engine.wait_to_read(c.var());
  EXPECT_EQ(c.to_host<float>()[0], 16.0f);
  return openblas_get_num_threads();
}

TEST(BlasThreads, TheCoresAreSharedAmongTheWorkers) {
  EXPECT_EQ(blas_threads_for(2, 2), 1);
  EXPECT_EQ(blas_threads_for(2, 1), 2);
  EXPECT_EQ(blas_threads_for(16, 4), 4);
  EXPECT_EQ(blas_threads_for(3, 2), 1);
  EXPECT_EQ(blas_threads_for(1, 8), 1);
  EXPECT_EQ(blas_threads_for(16, 0), 16);
}

TEST(BlasThreads, AGemmRunsWithItsEnginesShareOfTheCores) {
  const int cores = usable_cores();
  Engine one_worker_per_core(EngineOptions{.cpu_threads = cores, .read_environment = false});
  EXPECT_EQ(blas_threads_after_a_gemm(one_worker_per_core), blas_threads_for(cores, cores));
  // The naive engine runs every op on the pushing thread: one worker.
  Engine naive(EngineOptions{.kind = EngineKind::Naive, .read_environment = false});
  EXPECT_EQ(blas_threads_after_a_gemm(naive), cores);
  EXPECT_EQ(blas_threads_after_a_gemm(one_worker_per_core), blas_threads_for(cores, cores));
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
  EXPECT_EQ(blas_threads_after_a_gemm(engine), blas_threads_for(usable_cores(), 2));
}

}  // namespace
}  // namespace depengine
