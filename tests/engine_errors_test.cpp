// Misuse is rejected at push time with nothing enqueued; failures propagate
// along written variables and are reported by the covering blocking call.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <depengine/engine.h>

#include "tests/support/engine_setups.h"
#include "tests/support/message_of.h"

namespace depengine {
namespace {

class Errors : public EngineSetupTest {
 protected:
  EngineOptions options() const { return {.kind = kind(), .cpu_threads = 2, .read_environment = false}; }
};

INSTANTIATE_TEST_SUITE_P(Engines, Errors, kEngineSetups, engine_setup_name);

TEST_P(Errors, MisuseIsRejectedWithAClearMessageAndNothingRuns) {
  Engine engine(options());
  Engine other(options());
  Var a = engine.new_var("a"), b = engine.new_var("b");
  Var foreign = other.new_var("x");
  std::atomic<int> ran{0};
  auto count = [&](RunContext&) { ran.fetch_add(1); };

  EXPECT_THROW(engine.push(OpFn{}, {a}, {b}), std::invalid_argument);
  EXPECT_THROW(engine.push_async(AsyncOpFn{}, {a}, {b}), std::invalid_argument);
  EXPECT_NE(message_of([&] { engine.push(count, {Var{}}, {b}); }).find("null Var"), std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {foreign}, {b}); }).find("another engine"), std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {a}, {b, foreign}, {.name = "mix"}); })
                .find("'mix': variable 1 of its writes belongs to another engine"),
            std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {a}, {a}, {.name = "axpy"}); }).find("'axpy' lists variable 'a' in both"),
            std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {a, a}, {b}); }).find("twice"), std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {}, {b, b}); }).find("twice"), std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, {}, {b}, {.device = Device::cuda(7)}); }).find("cuda:7"),
            std::string::npos);
  EXPECT_THROW(engine.push(count, {}, {b}, {.device = Device{DeviceKind::custom, 1000}}), std::invalid_argument);

  engine.delete_var(a);
  EXPECT_NE(message_of([&] { engine.push(count, {a}, {b}); }).find("deleted"), std::string::npos);
  EXPECT_THROW(engine.delete_var(a), std::invalid_argument);  // double delete
  EXPECT_THROW(engine.delete_var(Var{}), std::invalid_argument);
  EXPECT_THROW(engine.delete_var(foreign), std::invalid_argument);
  EXPECT_THROW(engine.wait_to_read(a), std::invalid_argument);
  EXPECT_THROW(engine.wait_to_write(Var{}), std::invalid_argument);

  engine.wait_all();
  EXPECT_EQ(ran.load(), 0);
  // The engine still works, and b saw no operation.
  engine.push(count, {}, {b});
  engine.wait_to_read(b);
  EXPECT_EQ(ran.load(), 1);
}

// Lists longer than make_op sorts on the stack (16) take another path: the
// same checks hold there, and a valid long op still runs after the others.
TEST_P(Errors, LongVariableListsAreCheckedLikeShortOnes) {
  Engine engine(options());
  std::vector<Var> inputs;
  for (int i = 0; i < 40; ++i) inputs.push_back(engine.new_var("in" + std::to_string(i)));
  Var out = engine.new_var("out");
  Engine other(options());
  std::atomic<int> ran{0};
  auto count = [&](RunContext&) { ran.fetch_add(1); };

  std::vector<Var> repeated = inputs;
  repeated.push_back(inputs[30]);
  EXPECT_NE(message_of([&] { engine.push(count, repeated, {out}); }).find("lists variable 'in30' twice"),
            std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, inputs, {inputs[25]}); }).find("'in25' in both"), std::string::npos);
  std::vector<Var> with_foreign = inputs;
  with_foreign[33] = other.new_var("x");
  EXPECT_NE(message_of([&] { engine.push(count, with_foreign, {out}); })
                .find("variable 33 of its reads belongs to another engine"),
            std::string::npos);
  // A variable listed in both lists and twice in one is reported by its
  // first two listings.
  EXPECT_NE(message_of([&] { engine.push(count, repeated, {inputs[30]}); }).find("'in30' twice"), std::string::npos);
  EXPECT_NE(message_of([&] { engine.push(count, inputs, {inputs[3], inputs[3]}); }).find("'in3' in both"),
            std::string::npos);

  // Nothing above was enqueued; a valid long op runs after its inputs' writers.
  std::vector<int> values(inputs.size(), 0);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    engine.push([&values, i](RunContext&) { values[i] = static_cast<int>(i) + 1; }, {}, {inputs[i]});
  }
  int sum = -1;
  engine.push(
      [&](RunContext&) {
        sum = ran.load();
        for (int v : values) sum += v;
      },
      inputs, {out});
  engine.wait_to_read(out);
  EXPECT_EQ(sum, 40 * 41 / 2);
}

TEST_P(Errors, FailurePropagatesToDependentsWhichAreSkipped) {
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b"), c = engine.new_var("c"), free = engine.new_var("free");
  std::atomic<int> dependents_ran{0}, independent_ran{0};
  engine.push([](RunContext&) { throw std::runtime_error("boom"); }, {}, {a}, {.name = "fails"});
  engine.push([&](RunContext&) { dependents_ran.fetch_add(1); }, {a}, {b});
  engine.push([&](RunContext&) { dependents_ran.fetch_add(1); }, {b}, {c});
  engine.push([&](RunContext&) { independent_ran.fetch_add(1); }, {}, {free});

  EXPECT_NE(message_of([&] { engine.wait_to_read(c); }).find("boom"), std::string::npos);
  engine.wait_to_read(free);
  EXPECT_EQ(dependents_ran.load(), 0);
  EXPECT_EQ(independent_ran.load(), 1);
  // Reported once: the next wait on c is clean; a and b still carry it.
  EXPECT_NO_THROW(engine.wait_to_read(c));
  EXPECT_THROW(engine.wait_to_write(a), std::runtime_error);
  EXPECT_NO_THROW(engine.wait_to_read(a));
  // After being reported, the variables work again.
  engine.push([&](RunContext&) { dependents_ran.fetch_add(1); }, {a}, {c});
  engine.wait_to_read(c);
  EXPECT_EQ(dependents_ran.load(), 1);
  // wait_all reports b's still unreported failure, then is clean.
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(Errors, ReadersOfAFailedVariableAreSkippedButDoNotFailIt) {
  Engine engine(options());
  Var a = engine.new_var("a");
  std::atomic<int> ran{0};
  engine.push([](RunContext&) { throw std::runtime_error("bad write"); }, {}, {a});
  engine.push([&](RunContext&) { ran.fetch_add(1); }, {a}, {});
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
  EXPECT_EQ(ran.load(), 0);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(Errors, OfSeveralFailedInputsTheFirstListedGivesTheError) {
  // Which error an op touching two failed variables carries on must not
  // depend on where the variables live (slots are reused in a different
  // order by each engine) nor on timing: the first in its reads, then writes.
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b");
  Var ba = engine.new_var("ba"), ab = engine.new_var("ab"), read_b = engine.new_var("read_b");
  engine.push([](RunContext&) { throw std::runtime_error("a failed"); }, {}, {a});
  engine.push([](RunContext&) { throw std::runtime_error("b failed"); }, {}, {b});
  std::atomic<int> ran{0};
  engine.push([&](RunContext&) { ran.fetch_add(1); }, {b, a}, {ba});
  engine.push([&](RunContext&) { ran.fetch_add(1); }, {a, b}, {ab});
  engine.push([&](RunContext&) { ran.fetch_add(1); }, {b}, {read_b, a});  // reads come first
  EXPECT_EQ(message_of([&] { engine.wait_to_read(ba); }), "b failed");
  EXPECT_EQ(message_of([&] { engine.wait_to_read(ab); }), "a failed");
  EXPECT_EQ(message_of([&] { engine.wait_to_read(read_b); }), "b failed");
  EXPECT_EQ(message_of([&] { engine.wait_to_read(a); }), "b failed");
  EXPECT_EQ(ran.load(), 0);
  EXPECT_THROW(engine.wait_all(), std::runtime_error);  // b's own failure, unreported yet
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(Errors, AnOpWithoutWritesThatFailsIsReportedByWaitAll) {
  Engine engine(options());
  Var a = engine.new_var("a");
  engine.push([](RunContext&) { throw std::runtime_error("reader failed"); }, {a}, {});
  EXPECT_NO_THROW(engine.wait_to_read(a));  // it wrote nothing
  EXPECT_NE(message_of([&] { engine.wait_all(); }).find("reader failed"), std::string::npos);
}

TEST_P(Errors, FailureOfADeletedVariableIsReportedByWaitAll) {
  Engine engine(options());
  Var a = engine.new_var("a");
  engine.push([](RunContext&) { throw std::runtime_error("lost?"); }, {}, {a});
  engine.delete_var(a);
  EXPECT_NE(message_of([&] { engine.wait_all(); }).find("lost?"), std::string::npos);
}

// A composite operation's helper variable passes its failure on to the
// variables the composite writes: deleted, it files nothing more, while the
// failure is still reported through them, once each.
TEST_P(Errors, AHelperVariableDeletedMarkedReportsNothingMore) {
  Engine engine(options());
  Var out = engine.new_var("out");
  Var helper = engine.new_var("helper");
  engine.push([](RunContext&) { throw std::runtime_error("step failed"); }, {}, {helper});
  engine.push([](RunContext&) {}, {helper}, {out});  // skipped: marks out
  engine.delete_helper_var(helper);
  EXPECT_EQ(message_of([&] { engine.wait_to_read(out); }), "step failed");
  EXPECT_NO_THROW(engine.wait_all());
  // Without the wait on `out`, wait_all reports it for `out`.
  Var helper2 = engine.new_var("helper2");
  engine.push([](RunContext&) { throw std::runtime_error("again"); }, {}, {helper2});
  engine.push([](RunContext&) {}, {helper2}, {out});
  engine.delete_helper_var(helper2);
  EXPECT_EQ(message_of([&] { engine.wait_all(); }), "again");
  EXPECT_NO_THROW(engine.wait_all());
  // Using it after the delete throws, as for any deleted variable.
  EXPECT_THROW(engine.push([](RunContext&) {}, {helper2}, {}), std::invalid_argument);
  EXPECT_THROW(engine.delete_helper_var(helper2), std::invalid_argument);
}

TEST_P(Errors, ReleaseFunctionErrorsAreReported) {
  Engine engine(options());
  Var a = engine.new_var("a");
  engine.delete_var(a, [] { throw std::runtime_error("release failed"); });
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
}

TEST_P(Errors, AsyncFailureReportedThroughTheCompletion) {
  Engine engine(options());
  Var a = engine.new_var("a");
  // The I/O thread belongs to the test: the op may still be returning when
  // its completion was already called.
  std::promise<Completion> handoff;
  std::thread worker([future = handoff.get_future()]() mutable {
    future.get()(std::make_exception_ptr(std::runtime_error("io error")));
  });
  engine.push_async([&](RunContext&, Completion done) { handoff.set_value(std::move(done)); }, {}, {a});
  EXPECT_NE(message_of([&] { engine.wait_to_read(a); }).find("io error"), std::string::npos);
  worker.join();
}

TEST_P(Errors, AsyncCompletionCalledTwiceThrows) {
  Engine engine(options());
  Var a = engine.new_var("a");
  std::atomic<int> second_threw{0};
  std::promise<void> returned;
  engine.push_async([&](RunContext&, Completion done) {
    done();
    try {
      done();
    } catch (const std::logic_error&) {
      second_threw.fetch_add(1);
    }
    returned.set_value();
  }, {}, {a});
  engine.wait_all();
  // The first call completed the op, so wait_all may return while the
  // function is still making its second call.
  ASSERT_EQ(returned.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  EXPECT_EQ(second_threw.load(), 1);
}

TEST_P(Errors, AsyncCompletionDroppedUncalledFailsTheOperation) {
  Engine engine(options());
  Var a = engine.new_var("a");
  engine.push_async([](RunContext&, Completion) {}, {}, {a}, {.name = "forgetful"});
  EXPECT_NE(message_of([&] { engine.wait_to_read(a); }).find("'forgetful' dropped its Completion"), std::string::npos);
}

TEST_P(Errors, AnUnnamedAsyncOpThatDropsItsCompletionIsNotGivenAnEarlierOpsName) {
  Engine engine(options());
  Var a = engine.new_var("a");
  // Named ops leave their names in pooled blocks that later pushes reuse.
  for (int i = 0; i < 100; ++i) engine.push([](RunContext&) {}, {}, {a}, {.name = "earlier"});
  engine.wait_to_read(a);
  engine.push_async([](RunContext&, Completion) {}, {}, {a});
  const std::string message = message_of([&] { engine.wait_to_read(a); });
  EXPECT_NE(message.find("operation '' dropped its Completion"), std::string::npos) << message;
}

TEST_P(Errors, AsyncFunctionThatThrowsFailsTheOperation) {
  Engine engine(options());
  Var a = engine.new_var("a");
  engine.push_async([](RunContext&, Completion) { throw std::runtime_error("could not start"); }, {}, {a});
  EXPECT_NE(message_of([&] { engine.wait_to_read(a); }).find("could not start"), std::string::npos);
}

// Readers of a failed variable are skipped where they are registered; when
// that is a worker taking sealed batches off the frontend while it waits for
// work, the skipped ops complete there, and a wait_all already asleep must
// still be woken. Many rounds, since the race is narrow.
TEST_P(Errors, SkippedOpsCompletedByAnIdleWorkerWakeWaitAll) {
  Engine engine(options());
  Var failed = engine.new_var("failed");
  for (int round = 0; round < 300; ++round) {
    engine.push([](RunContext&) { throw std::runtime_error("round failure"); }, {}, {failed});
    for (int i = 0; i < 100; ++i) engine.push([](RunContext&) {}, {failed}, {});
    auto waited = std::async(std::launch::async, [&] {
      EXPECT_THROW(engine.wait_all(), std::runtime_error);
    });
    if (waited.wait_for(std::chrono::seconds(30)) == std::future_status::timeout) {
      ADD_FAILURE() << "wait_all was never woken (round " << round << ")";
      // The engine cannot be destroyed while its waiter sleeps.
      std::_Exit(1);
    }
  }
}

TEST_P(Errors, ExceptionsUnderLoadAreAllAccountedFor) {
  Engine engine(options());
  constexpr int kVars = 32;
  std::vector<Var> vars;
  for (int i = 0; i < kVars; ++i) vars.push_back(engine.new_var());
  std::atomic<int> ran{0};
  for (int i = 0; i < 20000; ++i) {
    const bool fail = i % 97 == 0;
    engine.push([&ran, fail](RunContext&) {
      if (fail) throw std::runtime_error("load failure");
      ran.fetch_add(1, std::memory_order_relaxed);
    }, {vars[(i * 7 + 3) % kVars]}, {vars[i % kVars]});
  }
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
  EXPECT_NO_THROW(engine.wait_all());
  for (Var v : vars) EXPECT_NO_THROW(engine.wait_to_write(v));
  // Everything reported, the engine runs normally again.
  const int before = ran.load();
  for (int i = 0; i < 1000; ++i) engine.push([&](RunContext&) { ran.fetch_add(1); }, {}, {vars[i % kVars]});
  engine.wait_all();
  EXPECT_EQ(ran.load(), before + 1000);
}

}  // namespace
}  // namespace depengine
