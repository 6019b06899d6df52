// External operations: work that happens outside the engine (an I/O thread,
// a callback, another thread pool) and ends through the operation's
// Completion. These tests check the pattern docs/embedding.md describes: the
// operation holds its variables until the completion is called, no engine
// thread waits meanwhile, and an error reported through it propagates like
// the error of any operation.

#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/engine.h>

#include "examples/embedding_thread_pool_device.h"

namespace {

using depengine::Completion;
using depengine::Engine;
using depengine::EngineKind;
using depengine::RunContext;
using depengine::Var;

/// Stands for a framework's I/O service: one thread running posted jobs in order.
class IoThread {
 public:
  IoThread() : thread_([this] { run(); }) {}
  ~IoThread() {
    post({});
    thread_.join();
  }
  void post(std::function<void()> job) {
    std::lock_guard lock(mutex_);  // notify under it, see FrameworkThreadPool::post
    jobs_.push_back(std::move(job));
    cv_.notify_one();
  }

 private:
  void run() {
    for (;;) {
      std::function<void()> job;
      {
        std::unique_lock lock(mutex_);
        cv_.wait(lock, [this] { return !jobs_.empty(); });
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      if (!job) return;  // the empty job stops the thread
      job();
    }
  }

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::thread thread_;
};

/// The framework's job types are copyable (std::function), a Completion is
/// not: hold it in a shared_ptr. If every copy is dropped uncalled, the
/// operation still fails instead of hanging.
std::shared_ptr<Completion> share(Completion done) { return std::make_shared<Completion>(std::move(done)); }

class EmbeddingExternalOps : public ::testing::TestWithParam<EngineKind> {
 protected:
  Engine engine_{{.kind = GetParam(), .cpu_threads = 1, .read_environment = false}};
};

INSTANTIATE_TEST_SUITE_P(Kinds, EmbeddingExternalOps, ::testing::Values(EngineKind::Threaded, EngineKind::Naive),
                         [](const auto& info) {
                           return info.param == EngineKind::Naive ? std::string("Naive") : std::string("Threaded");
                         });

TEST_P(EmbeddingExternalOps, ReadOnAnIoThreadFeedsTheNextOperation) {
  IoThread io;
  std::vector<int> buffer;
  int sum = 0;
  Var vbuf = engine_.new_var("buffer"), vsum = engine_.new_var("sum");
  engine_.push_async(
      [&](RunContext&, Completion done) {
        io.post([&buffer, done = share(std::move(done))] {
          buffer = {1, 2, 3, 4};  // "the bytes arrived"
          (*done)();
        });
      },
      {}, {vbuf}, {.name = "read"});
  engine_.push([&](RunContext&) { for (int x : buffer) sum += x; }, {vbuf}, {vsum}, {.name = "sum"});
  engine_.wait_to_read(vsum);
  EXPECT_EQ(sum, 10);
}

TEST_P(EmbeddingExternalOps, ErrorReportedThroughTheCompletionPropagates) {
  IoThread io;
  Var vbuf = engine_.new_var("buffer"), vout = engine_.new_var("out");
  bool consumer_ran = false;
  engine_.push_async(
      [&](RunContext&, Completion done) {
        io.post([done = share(std::move(done))] {
          (*done)(std::make_exception_ptr(std::runtime_error("connection reset by peer")));
        });
      },
      {}, {vbuf});
  engine_.push([&](RunContext&) { consumer_ran = true; }, {vbuf}, {vout});
  try {
    engine_.wait_to_read(vout);
    FAIL() << "expected the external operation's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "connection reset by peer");
  }
  EXPECT_FALSE(consumer_ran);
  EXPECT_THROW(engine_.wait_to_read(vbuf), std::runtime_error);

  // Reported, so cleared; the engine and the variables go on working.
  engine_.wait_all();
  engine_.push([&](RunContext&) { consumer_ran = true; }, {vbuf}, {vout});
  engine_.wait_to_read(vout);
  EXPECT_TRUE(consumer_ran);
}

TEST_P(EmbeddingExternalOps, CompletedFromCallbackOnAnotherThreadPool) {
  // The callback chain runs two stages on the framework's pool before it
  // completes the operation.
  FrameworkThreadPool pool(2);
  std::atomic<int> stage{0};
  Var v = engine_.new_var();
  engine_.push_async(
      [&](RunContext&, Completion done) {
        pool.post([&stage, &pool, done = share(std::move(done))] {
          stage = 1;
          pool.post([&stage, done] {
            stage = 2;
            (*done)();
          });
        });
      },
      {}, {v});
  engine_.wait_to_read(v);
  EXPECT_EQ(stage.load(), 2);
}

TEST_P(EmbeddingExternalOps, CompletionMayBeCalledBeforeTheFunctionReturns) {
  Var v = engine_.new_var();
  int value = 0;
  engine_.push_async(
      [&](RunContext&, Completion done) {
        value = 5;  // the "external" work was already finished
        done();
      },
      {}, {v});
  engine_.wait_to_read(v);
  EXPECT_EQ(value, 5);
}

TEST_P(EmbeddingExternalOps, CompletionCalledTwiceThrows) {
  std::promise<std::string> second_call;
  Var v = engine_.new_var();
  engine_.push_async(
      [&](RunContext&, Completion done) {
        done();
        try {
          done();
          second_call.set_value("no exception");
        } catch (const std::logic_error& e) {
          second_call.set_value(e.what());
        }
      },
      {}, {v});
  engine_.wait_to_read(v);
  EXPECT_NE(second_call.get_future().get().find("called twice"), std::string::npos);
}

TEST_P(EmbeddingExternalOps, DroppedCompletionFailsTheOperationInsteadOfHanging) {
  IoThread io;
  Var v = engine_.new_var();
  engine_.push_async(
      [&](RunContext&, Completion done) {
        // The framework loses the callback (e.g. the request was cancelled).
        io.post([done = share(std::move(done))] { /* never calls it */ });
      },
      {}, {v}, {.name = "lost"});
  try {
    engine_.wait_to_read(v);
    FAIL() << "expected an error for the dropped completion";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("'lost' dropped its Completion"), std::string::npos) << e.what();
  }
}

TEST(EmbeddingExternalOpsThreaded, NoEngineThreadWaitsForPendingExternalWork) {
  // One CPU worker. While the external operation is pending, an unrelated
  // operation must still run on it: the test releases the external work only
  // once that operation has run, so a worker held by the pending operation
  // would hang this test instead of passing it.
  Engine engine({.cpu_threads = 1, .read_environment = false});
  IoThread io;
  std::promise<void> unrelated_ran;
  std::shared_future<void> release = unrelated_ran.get_future().share();
  int value = 0;
  Var pending = engine.new_var("pending"), other = engine.new_var("other");
  engine.push_async(
      [&](RunContext&, Completion done) {
        io.post([&value, release, done = share(std::move(done))] {
          release.wait();
          value = 1;
          (*done)();
        });
      },
      {}, {pending});
  engine.push([&](RunContext&) { unrelated_ran.set_value(); }, {}, {other});
  engine.wait_to_read(other);
  engine.wait_to_read(pending);
  EXPECT_EQ(value, 1);
}

}  // namespace
