// The C API: what it computes, and the status code and message of every
// misuse it can detect. C API calls are noexcept, so a test that gets here
// without crashing has also shown that no exception crossed the boundary.

#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include "depengine/c_api.h"
#include "depengine/profiler.h"  // Profiler::available: whether this build has the profiler
#include "examples/embedding_thread_pool_device.h"

namespace {

std::string last_error() { return depengine_last_error(); }

/// How messages name a variable without a name: by its handle.
std::string unnamed_label(depengine_var handle) {
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(handle));
  return std::string(hex) + " (unnamed)";
}

/// An engine for one test, destroyed at its end.
class EmbeddingCApi : public ::testing::TestWithParam<depengine_engine_kind> {
 protected:
  void SetUp() override {
    depengine_engine_options options;
    ASSERT_EQ(depengine_engine_options_init(&options), DEPENGINE_OK);
    options.kind = GetParam();
    options.cpu_threads = 2;
    options.read_environment = 0;
    ASSERT_EQ(depengine_engine_create(&options, &engine_), DEPENGINE_OK) << last_error();
  }
  void TearDown() override {
    if (engine_ != nullptr) EXPECT_EQ(depengine_engine_destroy(engine_), DEPENGINE_OK);
  }

  depengine_var new_var(const char* name = nullptr) {
    depengine_var v = DEPENGINE_NULL_VAR;
    EXPECT_EQ(depengine_new_var(engine_, name, &v), DEPENGINE_OK) << last_error();
    return v;
  }

  depengine_engine* engine_ = nullptr;
};

void add_one(void* data, depengine_op_context*) { ++*static_cast<int*>(data); }
void count(void* data, depengine_op_context*) { static_cast<std::atomic<int>*>(data)->fetch_add(1); }
void fail_with_message(void* data, depengine_op_context* ctx) {
  depengine_op_fail(ctx, static_cast<const char*>(data));
}

struct Pair {
  int* from;
  int* to;
};
void copy_plus_one(void* data, depengine_op_context*) {
  auto* p = static_cast<Pair*>(data);
  *p->to = *p->from + 1;
}

INSTANTIATE_TEST_SUITE_P(Kinds, EmbeddingCApi, ::testing::Values(DEPENGINE_ENGINE_THREADED, DEPENGINE_ENGINE_NAIVE),
                         [](const auto& info) {
                           return info.param == DEPENGINE_ENGINE_NAIVE ? std::string("Naive") : std::string("Threaded");
                         });

// ---------------------------------------------------------------- behaviour

TEST_P(EmbeddingCApi, ChainOfPushesComputesInOrder) {
  int a = 0, b = 0;
  depengine_var va = new_var("a"), vb = new_var("b");
  Pair p{&a, &b};
  for (int i = 0; i < 10; ++i) ASSERT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &va, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine_, copy_plus_one, &p, &va, 1, &vb, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, vb), DEPENGINE_OK) << last_error();
  EXPECT_EQ(a, 10);
  EXPECT_EQ(b, 11);
  EXPECT_EQ(depengine_wait_to_write(engine_, va), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
}

TEST_P(EmbeddingCApi, PushOptionsAreAccepted) {
  depengine_push_options options;
  ASSERT_EQ(depengine_push_options_init(&options), DEPENGINE_OK);
  options.priority = 3;
  options.name = "named";
  options.bytes = 1 << 20;
  int a = 0;
  depengine_var va = new_var();
  ASSERT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &va, 1, &options), DEPENGINE_OK) << last_error();
  ASSERT_EQ(depengine_wait_to_read(engine_, va), DEPENGINE_OK);
  EXPECT_EQ(a, 1);
}

// A program built against the first release's header passes the struct as
// it ended then, before `bytes`; a size that is neither layout is rejected.
TEST_P(EmbeddingCApi, PushOptionsOfTheFirstLayoutAreAccepted) {
  depengine_push_options options;
  ASSERT_EQ(depengine_push_options_init(&options), DEPENGINE_OK);
  options.struct_size = offsetof(depengine_push_options, bytes);
  options.bytes = 12345;  // past the caller's struct: never read
  int a = 0;
  depengine_var va = new_var();
  ASSERT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &va, 1, &options), DEPENGINE_OK) << last_error();
  ASSERT_EQ(depengine_wait_to_read(engine_, va), DEPENGINE_OK);
  EXPECT_EQ(a, 1);
  options.struct_size = offsetof(depengine_push_options, bytes) + 4;
  EXPECT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &va, 1, &options), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("depengine_push_options_init"), std::string::npos) << last_error();
}

TEST_P(EmbeddingCApi, OperationSeesItsDevice) {
  struct Seen {
    depengine_device_kind kind = DEPENGINE_DEVICE_CUDA;
    int index = -1;
    void* stream = &index;
  } seen;
  depengine_var v = new_var();
  auto fn = [](void* data, depengine_op_context* ctx) {
    auto* s = static_cast<Seen*>(data);
    depengine_op_device(ctx, &s->kind, &s->index);
    depengine_op_stream(ctx, &s->stream);
  };
  ASSERT_EQ(depengine_push(engine_, fn, &seen, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK);
  EXPECT_EQ(seen.kind, DEPENGINE_DEVICE_CPU);
  EXPECT_EQ(seen.index, 0);
  EXPECT_EQ(seen.stream, nullptr);
}

TEST_P(EmbeddingCApi, ReleaseRunsAfterEarlierOperations) {
  struct State {
    int value = 0;
    int value_at_release = -1;
  } state;
  depengine_var v = new_var();
  ASSERT_EQ(depengine_push(engine_, add_one, &state.value, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  auto release = [](void* data) {
    auto* s = static_cast<State*>(data);
    s->value_at_release = s->value;
  };
  ASSERT_EQ(depengine_delete_var(engine_, v, release, &state), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(state.value_at_release, 1);
}

TEST_P(EmbeddingCApi, PushFromInsideAnOperation) {
  struct State {
    depengine_engine* engine;
    depengine_var v;
    int value = 0;
    depengine_status inner = DEPENGINE_ERROR_INTERNAL;
  } state{engine_, new_var()};
  auto outer = [](void* data, depengine_op_context*) {
    auto* s = static_cast<State*>(data);
    s->inner = depengine_push(s->engine, add_one, &s->value, nullptr, 0, &s->v, 1, nullptr);
  };
  depengine_var trigger = new_var();
  ASSERT_EQ(depengine_push(engine_, outer, &state, nullptr, 0, &trigger, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, trigger), DEPENGINE_OK);
  EXPECT_EQ(state.inner, DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, state.v), DEPENGINE_OK);
  EXPECT_EQ(state.value, 1);
}

TEST_P(EmbeddingCApi, AsyncOperationCompletedFromAnotherThread) {
  struct State {
    FrameworkThreadPool io{1};  // the program's own thread
    int value = 0;
  } state;
  depengine_var v = new_var(), w = new_var();
  auto start = [](void* data, depengine_op_context*, depengine_completion done) {
    auto* s = static_cast<State*>(data);
    s->io.post([s, done] {
      s->value = 41;
      depengine_complete(done, nullptr);
    });
  };
  int w_value = 0;
  Pair p{&state.value, &w_value};
  ASSERT_EQ(depengine_push_async(engine_, start, &state, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine_, copy_plus_one, &p, &v, 1, &w, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, w), DEPENGINE_OK) << last_error();
  EXPECT_EQ(w_value, 42);
}

TEST_P(EmbeddingCApi, AsyncOperationCompletedInsideItsFunction) {
  depengine_var v = new_var();
  auto start = [](void*, depengine_op_context*, depengine_completion done) { depengine_complete(done, nullptr); };
  ASSERT_EQ(depengine_push_async(engine_, start, nullptr, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK) << last_error();
}

TEST_P(EmbeddingCApi, PushesFromSeveralThreadsKeepPerVariableOrder) {
  // Each thread appends its own sequence to its own variable's log, and
  // counts into one shared variable; per-variable push order must hold.
  constexpr int kThreads = 3, kPushes = 300;
  struct Step {
    std::vector<int>* log;
    int value;
  };
  std::vector<std::vector<int>> logs(kThreads);
  std::vector<std::vector<Step>> steps(kThreads);
  std::vector<depengine_var> vars(kThreads);
  int shared_count = 0;
  depengine_var shared = new_var("shared");
  for (int t = 0; t < kThreads; ++t) {
    vars[t] = new_var();
    for (int i = 0; i < kPushes; ++i) steps[t].push_back({&logs[t], i});
  }
  auto append = [](void* data, depengine_op_context*) {
    auto* step = static_cast<Step*>(data);
    step->log->push_back(step->value);
  };
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPushes; ++i) {
        if (depengine_push(engine_, append, &steps[t][i], nullptr, 0, &vars[t], 1, nullptr) != DEPENGINE_OK ||
            depengine_push(engine_, add_one, &shared_count, nullptr, 0, &shared, 1, nullptr) != DEPENGINE_OK) {
          failures++;
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK) << last_error();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(shared_count, kThreads * kPushes);
  for (int t = 0; t < kThreads; ++t) {
    ASSERT_EQ(logs[t].size(), static_cast<std::size_t>(kPushes));
    for (int i = 0; i < kPushes; ++i) EXPECT_EQ(logs[t][i], i) << "thread " << t;
  }
}

// ---------------------------------------------------------------- operation errors

TEST_P(EmbeddingCApi, FailedOperationIsReportedByTheWaitAndPropagates) {
  depengine_var v = new_var("v"), w = new_var("w");
  std::atomic<int> ran{0};
  ASSERT_EQ(depengine_push(engine_, fail_with_message, const_cast<char*>("disk full"), nullptr, 0, &v, 1, nullptr),
            DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine_, count, &ran, &v, 1, &w, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, w), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(last_error(), "disk full");
  EXPECT_EQ(ran.load(), 0) << "an operation reading a failed variable is skipped";
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(last_error(), "disk full");

  // Reported, so cleared: the engine goes on working.
  EXPECT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  int a = 0;
  ASSERT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK);
  EXPECT_EQ(a, 1);
}

TEST_P(EmbeddingCApi, WaitAllReportsAFailedOperationWithoutWrites) {
  ASSERT_EQ(depengine_push(engine_, fail_with_message, const_cast<char*>("no writes"), nullptr, 0, nullptr, 0, nullptr),
            DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_all(engine_), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(last_error(), "no writes");
  EXPECT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
}

TEST_P(EmbeddingCApi, ExceptionThrownByTheFunctionFailsTheOperation) {
  depengine_var v = new_var();
  // A C++ function used as a C callback that throws anyway: reported as an
  // operation failure, even for an exception type the API uses for misuse.
  auto thrower = [](void*, depengine_op_context*) { throw std::invalid_argument("bad input file"); };
  ASSERT_EQ(depengine_push(engine_, thrower, nullptr, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(last_error(), "bad input file");
}

TEST_P(EmbeddingCApi, AsyncErrorMessagePropagates) {
  FrameworkThreadPool io(1);
  depengine_var v = new_var(), w = new_var();
  auto start = [](void* data, depengine_op_context*, depengine_completion done) {
    static_cast<FrameworkThreadPool*>(data)->post([done] { depengine_complete(done, "connection reset"); });
  };
  std::atomic<int> ran{0};
  ASSERT_EQ(depengine_push_async(engine_, start, &io, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine_, count, &ran, &v, 1, &w, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, w), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(last_error(), "connection reset");
  EXPECT_EQ(ran.load(), 0);
}

// ---------------------------------------------------------------- misuse: INVALID_ARGUMENT

TEST(EmbeddingCApiMisuse, NullEngineIsRejectedByEveryCall) {
  depengine_var v = DEPENGINE_NULL_VAR;
  int threads = 0;
  const std::vector<std::pair<const char*, depengine_status>> calls = {
      {"depengine_engine_destroy", depengine_engine_destroy(nullptr)},
      {"depengine_engine_cpu_threads", depengine_engine_cpu_threads(nullptr, &threads)},
      {"depengine_new_var", depengine_new_var(nullptr, "x", &v)},
      {"depengine_delete_var", depengine_delete_var(nullptr, v, nullptr, nullptr)},
      {"depengine_push", depengine_push(nullptr, add_one, nullptr, nullptr, 0, nullptr, 0, nullptr)},
      {"depengine_push_async",
       depengine_push_async(nullptr, [](void*, depengine_op_context*, depengine_completion) {}, nullptr, nullptr, 0,
                            nullptr, 0, nullptr)},
      {"depengine_wait_to_read", depengine_wait_to_read(nullptr, v)},
      {"depengine_wait_to_write", depengine_wait_to_write(nullptr, v)},
      {"depengine_wait_all", depengine_wait_all(nullptr)},
      {"depengine_profiler_start", depengine_profiler_start(nullptr)},
      {"depengine_profiler_stop", depengine_profiler_stop(nullptr)},
      {"depengine_profiler_dump", depengine_profiler_dump(nullptr, "trace.json")},
  };
  for (const auto& [name, status] : calls) {
    EXPECT_EQ(status, DEPENGINE_ERROR_INVALID_ARGUMENT) << name;
  }
  // The message names the last failing call and the problem.
  EXPECT_EQ(last_error(), "depengine_profiler_dump: null engine");
}

TEST(EmbeddingCApiMisuse, NullPointersAreRejected) {
  EXPECT_EQ(depengine_engine_options_init(nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_push_options_init(nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_engine_create(nullptr, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_op_fail(nullptr, "x"), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_op_device(nullptr, nullptr, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_op_stream(nullptr, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);

  depengine_engine* engine = nullptr;
  ASSERT_EQ(depengine_engine_create(nullptr, &engine), DEPENGINE_OK);
  EXPECT_EQ(depengine_new_var(engine, "x", nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_engine_cpu_threads(engine, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_profiler_dump(engine, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_engine_destroy(engine), DEPENGINE_OK);
}

TEST(EmbeddingCApiMisuse, BadEngineOptionsAreRejected) {
  depengine_engine* engine = nullptr;
  depengine_engine_options options = {};  // struct_size not set: not initialized
  EXPECT_EQ(depengine_engine_create(&options, &engine), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("depengine_engine_options_init"), std::string::npos) << last_error();

  depengine_engine_options_init(&options);
  options.kind = static_cast<depengine_engine_kind>(7);
  EXPECT_EQ(depengine_engine_create(&options, &engine), DEPENGINE_ERROR_INVALID_ARGUMENT);

  depengine_engine_options_init(&options);
  options.max_ops_in_flight = 0;
  EXPECT_EQ(depengine_engine_create(&options, &engine), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("max_ops_in_flight"), std::string::npos) << last_error();

  depengine_engine_options_init(&options);
  options.cpu_threads = -1;
  EXPECT_EQ(depengine_engine_create(&options, &engine), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(engine, nullptr) << "no engine is returned on an error";
}

TEST_P(EmbeddingCApi, CpuThreadsAreReported) {
  int threads = 0;
  ASSERT_EQ(depengine_engine_cpu_threads(engine_, &threads), DEPENGINE_OK);
  EXPECT_EQ(threads, GetParam() == DEPENGINE_ENGINE_NAIVE ? 1 : 2);
}

TEST_P(EmbeddingCApi, BadPushArgumentsAreRejectedAndNothingIsPushed) {
  std::atomic<int> ran{0};
  depengine_var a = new_var(), b = new_var();
  const depengine_var both[] = {a, b};
  const depengine_var twice[] = {a, a};

  EXPECT_EQ(depengine_push(engine_, nullptr, &ran, nullptr, 0, &a, 1, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "depengine_push: null function");
  EXPECT_EQ(depengine_push_async(engine_, nullptr, &ran, nullptr, 0, &a, 1, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 1, &a, 1, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_push(engine_, count, &ran, &a, 1, nullptr, 2, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 0, twice, 2, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "depengine_push: an operation lists variable " + unnamed_label(a) + " twice");
  EXPECT_EQ(depengine_push(engine_, count, &ran, both, 2, &b, 1, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "depengine_push: an operation lists variable " + unnamed_label(b) +
                              " in both its reads and its writes");

  depengine_push_options options = {};  // not initialized
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 0, &a, 1, &options), DEPENGINE_ERROR_INVALID_ARGUMENT);
  depengine_push_options_init(&options);
  options.device_kind = static_cast<depengine_device_kind>(9);
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 0, &a, 1, &options), DEPENGINE_ERROR_INVALID_ARGUMENT);
  depengine_push_options_init(&options);
  options.device_kind = DEPENGINE_DEVICE_CUSTOM;
  options.device_index = 5;
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 0, &a, 1, &options), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(last_error().find("custom:5"), std::string::npos) << last_error();

  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

// A duplicate is named as the caller knows it: by its name, else by its handle.
TEST_P(EmbeddingCApi, DuplicateVariableMessagesNameTheVariable) {
  std::atomic<int> ran{0};
  const depengine_var weights = new_var("weights"), unnamed = new_var();
  const depengine_var twice[] = {weights, unnamed, weights};
  EXPECT_EQ(depengine_push(engine_, count, &ran, twice, 3, nullptr, 0, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "depengine_push: an operation lists variable 'weights' twice");
  depengine_push_options options;
  depengine_push_options_init(&options);
  options.name = "update";
  EXPECT_EQ(depengine_push_async(engine_, [](void*, depengine_op_context*, depengine_completion) {}, &ran, &unnamed, 1,
                                 &unnamed, 1, &options),
            DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error(), "depengine_push_async: operation 'update' lists variable " + unnamed_label(unnamed) +
                              " in both its reads and its writes");
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

// What the engine rejects is reported with the name of the C call that
// passed it on, like what the C layer rejects itself.
TEST_P(EmbeddingCApi, EngineRejectionsNameTheCall) {
  std::atomic<int> ran{0};
  const depengine_var a = new_var("a");
  ASSERT_EQ(depengine_delete_var(engine_, a, nullptr, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_push(engine_, count, &ran, &a, 1, nullptr, 0, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(last_error().rfind("depengine_push: ", 0), 0u) << last_error();
  EXPECT_EQ(depengine_wait_to_write(engine_, a), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(last_error().rfind("depengine_wait_to_write: ", 0), 0u) << last_error();
  depengine_push_options options;
  depengine_push_options_init(&options);
  options.device_kind = DEPENGINE_DEVICE_EMULATED;
  const depengine_var b = new_var("b");
  EXPECT_EQ(depengine_push_async(engine_, [](void*, depengine_op_context*, depengine_completion) {}, &ran, nullptr, 0,
                                 &b, 1, &options),
            DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(last_error().rfind("depengine_push_async: ", 0), 0u) << last_error();
  EXPECT_NE(last_error().find("emulated:0"), std::string::npos) << last_error();
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

// A length_error from a container (a count no memory can hold: the array is
// never read, the reservation fails first) is reported as out of memory with
// the call's name, not as the bare container message.
TEST_P(EmbeddingCApi, ImpossibleAllocationsNameTheCall) {
  std::atomic<int> ran{0};
  const depengine_var a = new_var("a");
  const std::size_t absurd = SIZE_MAX / 16;
  EXPECT_EQ(depengine_push(engine_, count, &ran, &a, absurd, nullptr, 0, nullptr), DEPENGINE_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(last_error().rfind("depengine_push: out of memory (", 0), 0u) << last_error();
  EXPECT_EQ(depengine_push_async(engine_, [](void*, depengine_op_context*, depengine_completion) {}, &ran, nullptr, 0,
                                 &a, absurd, nullptr),
            DEPENGINE_ERROR_OUT_OF_MEMORY);
  EXPECT_EQ(last_error().rfind("depengine_push_async: out of memory (", 0), 0u) << last_error();
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

// ---------------------------------------------------------------- misuse: UNKNOWN_VAR

TEST_P(EmbeddingCApi, NullAndForgedVariablesAreUnknown) {
  std::atomic<int> ran{0};
  depengine_var a = new_var();
  const depengine_var null_var = DEPENGINE_NULL_VAR;
  const depengine_var forged = a ^ 0x0100'0000'0000'0000ull;  // another engine's tag
  EXPECT_EQ(depengine_push(engine_, count, &ran, &null_var, 1, &a, 1, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(last_error(), "depengine_push: variable 0 of its reads is null");
  EXPECT_EQ(depengine_push(engine_, count, &ran, nullptr, 0, &forged, 1, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(last_error(), "depengine_push: variable 0 of its writes is not a variable of this engine");
  EXPECT_EQ(depengine_wait_to_read(engine_, 12345), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(depengine_wait_to_write(engine_, null_var), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(depengine_delete_var(engine_, forged, nullptr, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

TEST_P(EmbeddingCApi, VariableOfAnotherEngineIsUnknown) {
  depengine_engine* other = nullptr;
  ASSERT_EQ(depengine_engine_create(nullptr, &other), DEPENGINE_OK);
  depengine_var theirs = DEPENGINE_NULL_VAR;
  ASSERT_EQ(depengine_new_var(other, "theirs", &theirs), DEPENGINE_OK);
  new_var();  // so that this engine has variables too
  int a = 0;
  EXPECT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &theirs, 1, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(depengine_wait_to_read(engine_, theirs), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(depengine_engine_destroy(other), DEPENGINE_OK);
  EXPECT_EQ(a, 0);
}

TEST_P(EmbeddingCApi, DeletedVariableIsUnknown) {
  std::atomic<int> ran{0};
  depengine_var a = new_var("a");
  ASSERT_EQ(depengine_delete_var(engine_, a, nullptr, nullptr), DEPENGINE_OK);
  // Right after the delete (it may still be pending) and once it completed.
  for (int round = 0; round < 2; ++round) {
    EXPECT_EQ(depengine_push(engine_, count, &ran, &a, 1, nullptr, 0, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR) << round;
    EXPECT_EQ(depengine_wait_to_read(engine_, a), DEPENGINE_ERROR_UNKNOWN_VAR) << round;
    EXPECT_EQ(depengine_delete_var(engine_, a, nullptr, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR) << round;
    ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  }
  // Its slot is reused by a new variable; the old handle stays unknown.
  depengine_var b = new_var("b");
  EXPECT_EQ(depengine_push(engine_, count, &ran, &a, 1, &b, 1, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  EXPECT_EQ(ran.load(), 0);
}

TEST(EmbeddingCApiMisuse, VariableWhoseDeletionIsPendingIsUnknown) {
  depengine_engine* engine = nullptr;
  ASSERT_EQ(depengine_engine_create(nullptr, &engine), DEPENGINE_OK);
  depengine_var v = DEPENGINE_NULL_VAR;
  ASSERT_EQ(depengine_new_var(engine, "v", &v), DEPENGINE_OK);
  // An asynchronous write that the test completes later keeps the delete pending.
  std::atomic<depengine_completion> held{0};
  auto start = [](void* data, depengine_op_context*, depengine_completion done) {
    static_cast<std::atomic<depengine_completion>*>(data)->store(done);
  };
  ASSERT_EQ(depengine_push_async(engine, start, &held, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_delete_var(engine, v, nullptr, nullptr), DEPENGINE_OK);
  int a = 0;
  EXPECT_EQ(depengine_push(engine, add_one, &a, &v, 1, nullptr, 0, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_EQ(depengine_wait_to_read(engine, v), DEPENGINE_ERROR_UNKNOWN_VAR);
  while (held.load() == 0) std::this_thread::yield();
  EXPECT_EQ(depengine_complete(held.load(), nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_engine_destroy(engine), DEPENGINE_OK);
  EXPECT_EQ(a, 0);
}

// ---------------------------------------------------------------- misuse: BAD_STATE

TEST_P(EmbeddingCApi, CompletionCalledTwiceIsRejected) {
  std::atomic<depengine_completion> handle{0};
  depengine_var v = new_var();
  auto start = [](void* data, depengine_op_context*, depengine_completion done) {
    static_cast<std::atomic<depengine_completion>*>(data)->store(done);
    depengine_complete(done, nullptr);
  };
  ASSERT_EQ(depengine_push_async(engine_, start, &handle, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK);
  EXPECT_EQ(depengine_complete(handle.load(), nullptr), DEPENGINE_ERROR_BAD_STATE);
  EXPECT_NE(last_error().find("already called"), std::string::npos) << last_error();
  EXPECT_EQ(depengine_complete(handle.load(), "late error"), DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(depengine_complete(0, nullptr), DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK) << "the late error changed nothing";
}

TEST_P(EmbeddingCApi, BlockingCallsInsideAnOperationAreRejected) {
  struct State {
    depengine_engine* engine;
    depengine_var v;
    depengine_status wait_all = DEPENGINE_OK, wait_read = DEPENGINE_OK, wait_write = DEPENGINE_OK,
                     destroy = DEPENGINE_OK;
    std::string message;
  } state{engine_, new_var()};
  auto op = [](void* data, depengine_op_context*) {
    auto* s = static_cast<State*>(data);
    s->wait_all = depengine_wait_all(s->engine);
    s->message = depengine_last_error();
    s->wait_read = depengine_wait_to_read(s->engine, s->v);
    s->wait_write = depengine_wait_to_write(s->engine, s->v);
    s->destroy = depengine_engine_destroy(s->engine);
  };
  depengine_var out = new_var();
  ASSERT_EQ(depengine_push(engine_, op, &state, nullptr, 0, &out, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine_, out), DEPENGINE_OK) << "the operation itself did not fail";
  EXPECT_EQ(state.wait_all, DEPENGINE_ERROR_BAD_STATE);
  EXPECT_NE(state.message.find("inside an operation"), std::string::npos) << state.message;
  EXPECT_EQ(state.message.rfind("depengine_wait_all: ", 0), 0u) << state.message;
  EXPECT_EQ(state.wait_read, DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(state.wait_write, DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(state.destroy, DEPENGINE_ERROR_BAD_STATE);
}

TEST_P(EmbeddingCApi, OpFailInsideAnAsyncOperationIsRejected) {
  depengine_status status = DEPENGINE_OK;
  depengine_var v = new_var();
  auto start = [](void* data, depengine_op_context* ctx, depengine_completion done) {
    *static_cast<depengine_status*>(data) = depengine_op_fail(ctx, "wrong channel");
    depengine_complete(done, nullptr);
  };
  ASSERT_EQ(depengine_push_async(engine_, start, &status, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine_, v), DEPENGINE_OK);
  EXPECT_EQ(status, DEPENGINE_ERROR_BAD_STATE);
}

// ---------------------------------------------------------------- profiler, names, messages

TEST_P(EmbeddingCApi, ProfilerRecordsAndDumpsAChromeTrace) {
  if (!depengine::Profiler::available()) {
    EXPECT_EQ(depengine_profiler_start(engine_), DEPENGINE_ERROR_NOT_AVAILABLE);
    GTEST_SKIP() << "the profiler's hooks were compiled out (DEPENGINE_PROFILER_HOOKS=OFF)";
  }
  // One file per process: ctest runs the instances of this test in parallel.
  const std::string path = ::testing::TempDir() + "embedding_c_api_trace_" + std::to_string(::getpid()) + ".json";
  EXPECT_EQ(depengine_profiler_dump(engine_, path.c_str()), DEPENGINE_ERROR_BAD_STATE) << "nothing recorded yet";
  ASSERT_EQ(depengine_profiler_start(engine_), DEPENGINE_OK) << last_error();
  depengine_push_options options;
  depengine_push_options_init(&options);
  options.name = "c_api_profiled_op";
  int a = 0;
  depengine_var v = new_var("profiled");
  ASSERT_EQ(depengine_push(engine_, add_one, &a, nullptr, 0, &v, 1, &options), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_all(engine_), DEPENGINE_OK);
  ASSERT_EQ(depengine_profiler_stop(engine_), DEPENGINE_OK);
  ASSERT_EQ(depengine_profiler_dump(engine_, path.c_str()), DEPENGINE_OK) << last_error();
  std::ifstream file(path);
  const std::string trace((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  EXPECT_NE(trace.find("traceEvents"), std::string::npos);
  EXPECT_NE(trace.find("c_api_profiled_op"), std::string::npos);
  std::remove(path.c_str());

  EXPECT_EQ(depengine_profiler_dump(engine_, "/nonexistent-dir/trace.json"), DEPENGINE_ERROR_IO);
}


TEST(EmbeddingCApiErrors, StatusNamesAndVersion) {
  EXPECT_STREQ(depengine_status_name(DEPENGINE_OK), "DEPENGINE_OK");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_INVALID_ARGUMENT), "DEPENGINE_ERROR_INVALID_ARGUMENT");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_UNKNOWN_VAR), "DEPENGINE_ERROR_UNKNOWN_VAR");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_OPERATION_FAILED), "DEPENGINE_ERROR_OPERATION_FAILED");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_BAD_STATE), "DEPENGINE_ERROR_BAD_STATE");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_NOT_AVAILABLE), "DEPENGINE_ERROR_NOT_AVAILABLE");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_OUT_OF_MEMORY), "DEPENGINE_ERROR_OUT_OF_MEMORY");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_INTERNAL), "DEPENGINE_ERROR_INTERNAL");
  EXPECT_STREQ(depengine_status_name(DEPENGINE_ERROR_IO), "DEPENGINE_ERROR_IO");
  EXPECT_STREQ(depengine_status_name(static_cast<depengine_status>(99)), "unknown depengine_status");
  EXPECT_EQ(depengine_c_api_version(), DEPENGINE_C_API_VERSION);
}

TEST(EmbeddingCApiErrors, LastErrorIsPerThreadAndKeptBySuccessfulCalls) {
  EXPECT_EQ(depengine_wait_all(nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  const std::string mine = last_error();
  std::string other_thread = "unset";
  std::thread([&] { other_thread = last_error(); }).join();
  EXPECT_EQ(other_thread, "");

  depengine_engine_options options;
  EXPECT_EQ(depengine_engine_options_init(&options), DEPENGINE_OK);
  EXPECT_EQ(last_error(), mine);
}

}  // namespace
