// CPU tensor memory is allocated at its first touch (ops/tensor_storage.h):
// by the first op that runs on the tensor, or by Tensor::data().

#include <cstdint>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <thread>

#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

namespace ops = depengine::ops;

// What an op of the ops library wrote is where Tensor::data() points,
// whichever touched the memory first.
TEST(TensorMemory, TheFirstWriterAndDataAgreeOnTheBuffer) {
  for (EngineKind kind : {EngineKind::Threaded, EngineKind::Naive}) {
    auto engine = make_engine(kind);
    Tensor written_first = Tensor::empty(*engine, {16});
    ops::fill(written_first, 3.0);
    engine->wait_all();
    const auto* p = static_cast<const float*>(written_first.data());
    for (int i = 0; i < 16; ++i) EXPECT_EQ(p[i], 3.0f);
    EXPECT_EQ(written_first.data(), p);  // allocated once

    Tensor touched_first = Tensor::empty(*engine, {16});
    void* q = touched_first.data();
    ops::fill(touched_first, 4.0);
    EXPECT_EQ(touched_first.to_host<float>(), std::vector<float>(16, 4.0f));
    EXPECT_EQ(touched_first.data(), q);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(static_cast<const float*>(q)[i], 4.0f);
  }
}

// Readers of a tensor nothing wrote run at once on several workers while the
// frontend asks for its memory: every one of them sees the same buffer.
TEST(TensorMemory, FirstTouchesAtOnceAgreeOnOneBuffer) {
  auto engine = std::make_unique<Engine>(EngineOptions{.cpu_threads = 4, .read_environment = false});
  for (int round = 0; round < 50; ++round) {
    Tensor untouched = Tensor::empty(*engine, {1024});
    std::mutex mutex;
    std::set<const void*> seen;
    for (int i = 0; i < 8; ++i) {
      engine->push(
          [&, untouched](RunContext&) {
            const void* p = untouched.data();
            std::lock_guard lock(mutex);
            seen.insert(p);
          },
          {untouched.var()}, {});
    }
    const void* frontend = untouched.data();
    engine->wait_all();
    ASSERT_EQ(seen.size(), 1u) << "round " << round;
    EXPECT_EQ(*seen.begin(), frontend);
  }
}

// An allocation that fails fails the op that touched the memory first: its
// readers see std::bad_alloc at their blockers, and the engine goes on.
TEST(TensorMemory, AFailedFirstTouchIsTheErrorOfThatOp) {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "a sanitizer's allocator aborts on an allocation this size instead of failing it";
#endif
  for (EngineKind kind : {EngineKind::Threaded, EngineKind::Naive}) {
    auto engine = make_engine(kind);
    const std::int64_t too_many = std::numeric_limits<std::int64_t>::max() / 8;
    Tensor huge = Tensor::empty(*engine, {too_many});  // nothing allocated yet
    ops::fill(huge, 1.0);
    EXPECT_THROW(engine->wait_to_read(huge.var()), std::bad_alloc);
    EXPECT_THROW(static_cast<void>(huge.data()), std::bad_alloc);
    Tensor fine = Tensor::full(*engine, {4}, 2.0);
    EXPECT_EQ(fine.to_host<float>(), std::vector<float>(4, 2.0f));
  }
}

// The point of allocating at the first touch: a result takes the buffer a
// temporary freed just before it ran, not one taken when it was pushed. On
// the naive engine, where every op runs at its push, the next result of the
// same size reuses the temporary's buffer.
TEST(TensorMemory, AResultReusesTheBufferATemporaryFreedBeforeItRan) {
  auto engine = make_engine(EngineKind::Naive);
  Tensor x = Tensor::full(*engine, {4096}, 1.0);
  const void* temporary = nullptr;
  {
    Tensor t = ops::scale(x, 2.0);
    temporary = t.data();
  }
  Tensor result = ops::scale(x, 3.0);
  EXPECT_EQ(result.data(), temporary);
  EXPECT_EQ(result.to_host<float>(), std::vector<float>(4096, 3.0f));
}

// A frontend far ahead of the workers holds no memory for the results it
// pushed: while the only worker is held, a chain of a thousand 1 MiB
// temporaries is pushed (each the scaled previous one, dropped once the next
// is pushed); once the worker runs, each takes the buffer the one before the
// previous freed, so a handful of buffers serve them all, not a thousand.
TEST(TensorMemory, AFrontendAheadOfTheWorkersTakesNoBuffers) {
  auto engine = std::make_unique<Engine>(EngineOptions{.cpu_threads = 1, .read_environment = false});
  Tensor t = Tensor::full(*engine, {1 << 18}, 1.0);
  // Holds the chain until every op of it is pushed. Asynchronous, so that
  // a push that runs ready ops itself (docs/semantics.md) cannot be stuck in it.
  std::mutex mutex;
  std::optional<Completion> gate;
  engine->push_async(
      [&](RunContext&, Completion done) {
        std::lock_guard lock(mutex);
        gate.emplace(std::move(done));
      },
      {}, {t.var()});
  std::set<const void*> buffers;
  for (int i = 0; i < 1000; ++i) {
    t = ops::scale(t, 1.0);
    engine->push(
        [&, t](RunContext&) {
          std::lock_guard lock(mutex);
          buffers.insert(t.data());
        },
        {t.var()}, {});
  }
  for (bool launched = false; !launched; std::this_thread::yield()) {
    std::lock_guard lock(mutex);
    launched = gate.has_value();
  }
  (*gate)();
  EXPECT_EQ(t.to_host<float>()[0], 1.0f);
  engine->wait_all();  // the recording ops read `t` after its last write: done before `buffers` goes
  std::lock_guard lock(mutex);
  EXPECT_LE(buffers.size(), 4u);
}

}  // namespace
}  // namespace depengine::testing
