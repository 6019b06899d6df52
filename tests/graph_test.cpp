// The rules of capture and replay (include/depengine/graph.h), on both engines.

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/graph.h>

#include "tests/support/engine_setups.h"

namespace depengine {
namespace {

class GraphRules : public EngineSetupTest {
 protected:
  EngineOptions options() const { return {.kind = kind(), .cpu_threads = 2, .read_environment = false}; }
};

INSTANTIATE_TEST_SUITE_P(Engines, GraphRules, kEngineSetups, engine_setup_name);

TEST_P(GraphRules, TheBodyIsRecordedNotRun) {
  Engine engine(options());
  int x = 0;
  Var vx = engine.new_var("x");
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { x += 1; }, {}, {vx});
    engine.push([&](RunContext&) { x *= 2; }, {}, {vx});
  });
  engine.wait_all();
  EXPECT_EQ(x, 0);
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(g.dependencies(), 1u);
  ASSERT_EQ(g.variables().size(), 1u);
  EXPECT_EQ(g.variables()[0], vx);
  for (int i = 0; i < 3; ++i) engine.replay(g);
  engine.wait_to_read(vx);
  EXPECT_EQ(x, 14);
}

TEST_P(GraphRules, ReplaysAreOrderedAgainstEagerPushesInPushOrder) {
  Engine engine(options());
  std::vector<int> log;
  Var v = engine.new_var("v");
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { log.push_back(1); }, {}, {v});
    engine.push([&](RunContext&) { log.push_back(2); }, {}, {v});
  });
  for (int i = 0; i < 50; ++i) {
    engine.push([&](RunContext&) { log.push_back(0); }, {}, {v});
    engine.replay(g);
    engine.push([&](RunContext&) { log.push_back(3); }, {}, {v});
  }
  engine.wait_all();
  std::vector<int> expected;
  for (int i = 0; i < 50; ++i) expected.insert(expected.end(), {0, 1, 2, 3});
  EXPECT_EQ(log, expected);
}

TEST_P(GraphRules, ReadsOfTheGraphRunAfterEarlierWritesAndBeforeLaterOnes) {
  Engine engine(options());
  int a = 0, seen = -1;
  Var va = engine.new_var("a"), vs = engine.new_var("seen");
  Graph g = engine.capture([&] { engine.push([&](RunContext&) { seen = a; }, {va}, {vs}); });
  for (int i = 1; i <= 20; ++i) {
    engine.push([&, i](RunContext&) { a = i; }, {}, {va});
    engine.replay(g);
    engine.wait_to_read(vs);
    EXPECT_EQ(seen, i);
  }
}

TEST_P(GraphRules, BlockingCallsInsideTheBodyThrow) {
  Engine engine(options());
  Var v = engine.new_var();
  EXPECT_THROW(engine.capture([&] { engine.wait_to_read(v); }), std::logic_error);
  EXPECT_THROW(engine.capture([&] { engine.wait_to_write(v); }), std::logic_error);
  EXPECT_THROW(engine.capture([&] { engine.wait_all(); }), std::logic_error);
  // Capture is off again afterwards.
  engine.wait_to_read(v);
  EXPECT_THROW(engine.capture([&] { (void)engine.capture([] {}); }), std::logic_error);
  Graph g = engine.capture([&] { engine.push([](RunContext&) {}, {}, {v}); });
  EXPECT_THROW(engine.capture([&] { engine.replay(g); }), std::logic_error);
}

TEST_P(GraphRules, PushesFromOtherThreadsDuringACaptureRunAsUsual) {
  Engine engine(options());
  Var v = engine.new_var();
  std::atomic<int> ran{0};
  Graph g = engine.capture([&] {
    std::thread other([&] {
      engine.push([&](RunContext&) { ++ran; }, {}, {v});
      engine.wait_to_read(v);
    });
    other.join();
    engine.push([&](RunContext&) { ran += 10; }, {}, {v});
  });
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(g.size(), 1u);
  engine.replay(g);
  engine.wait_all();
  EXPECT_EQ(ran.load(), 11);
}

TEST_P(GraphRules, VariablesMadeInsideBelongToTheGraphAndAreReusedByEveryReplay) {
  Engine engine(options());
  std::vector<int> buffer_owner;  // one "allocation" per variable made in a body
  int released = 0, result = 0;
  Var out = engine.new_var("out");
  int scratch = 0;
  Var made;
  Graph g = engine.capture([&] {
    made = engine.new_var("scratch");
    buffer_owner.push_back(1);
    engine.push([&](RunContext&) { scratch = 5; }, {}, {made});
    engine.push([&](RunContext&) { result += scratch; }, {made}, {out});
    engine.delete_var(made, [&] { ++released; });
  });
  EXPECT_EQ(buffer_owner.size(), 1u);
  EXPECT_EQ(g.own_variables().size(), 1u);
  EXPECT_EQ(g.variables().size(), 1u);
  for (int i = 0; i < 4; ++i) engine.replay(g);
  engine.wait_to_read(out);
  EXPECT_EQ(result, 20);
  EXPECT_EQ(released, 0);  // static: released with the graph, not per replay
  engine.wait_to_read(made);  // still alive
  g = Graph();
  engine.wait_all();
  EXPECT_EQ(released, 1);
  EXPECT_THROW(engine.wait_to_read(made), std::invalid_argument);
}

TEST_P(GraphRules, AVariableTheBodyMadeAndKeptOutlivesTheGraph) {
  Engine engine(options());
  Var kept;
  int value = 0;
  {
    Graph g = engine.capture([&] {
      kept = engine.new_var("kept");
      engine.push([&](RunContext&) { ++value; }, {}, {kept});
    });
    engine.replay(g);
    engine.replay(g);
  }
  engine.wait_to_read(kept);  // still alive: the caller's, as after eager pushes
  EXPECT_EQ(value, 2);
  engine.delete_var(kept);
  engine.wait_all();
}

TEST_P(GraphRules, UsingAVariableTheBodyDeletedThrows) {
  Engine engine(options());
  EXPECT_THROW(engine.capture([&] {
    Var t = engine.new_var();
    engine.delete_var(t);
    engine.push([](RunContext&) {}, {t}, {});
  }),
               std::invalid_argument);
}

TEST_P(GraphRules, DeletingAnOutsideVariableInsideTheBodyThrows) {
  Engine engine(options());
  Var v = engine.new_var();
  int released = 0;
  EXPECT_THROW(engine.capture([&] {
    engine.delete_var(v, [&] { ++released; });
    EXPECT_THROW(engine.delete_var(v), std::invalid_argument);  // twice, as outside a capture
  }),
               std::invalid_argument);
  // Deleted as asked, once the capture ended (no graph was made).
  EXPECT_THROW(engine.wait_to_read(v), std::invalid_argument);
  engine.wait_all();
  EXPECT_EQ(released, 1);
}

TEST_P(GraphRules, AFailedCaptureReleasesWhatItMade) {
  Engine engine(options());
  Var made;
  int released = 0;
  EXPECT_THROW(engine.capture([&] {
    made = engine.new_var();
    engine.delete_var(made, [&] { ++released; });
    throw std::runtime_error("body failed");
  }),
               std::runtime_error);
  engine.wait_all();
  EXPECT_EQ(released, 1);
  EXPECT_THROW(engine.wait_to_read(made), std::invalid_argument);
}

TEST_P(GraphRules, BadPushesInsideTheBodyAreRejectedAsUsual) {
  Engine engine(options());
  Var v = engine.new_var();
  EXPECT_THROW(engine.capture([&] { engine.push([](RunContext&) {}, {v}, {v}); }), std::invalid_argument);
  EXPECT_THROW(engine.capture([&] { engine.push(OpFn(), {}, {v}); }), std::invalid_argument);
  EXPECT_THROW(engine.capture([&] { engine.push([](RunContext&) {}, {Var()}, {}); }), std::invalid_argument);
}

TEST_P(GraphRules, AGraphOfAnotherEngineIsRejected) {
  Engine engine(options());
  Engine other(options());
  Var v = other.new_var();
  Graph g = other.capture([&] { other.push([](RunContext&) {}, {}, {v}); });
  EXPECT_THROW(engine.replay(g), std::invalid_argument);
  Graph empty;
  EXPECT_THROW(engine.replay(empty), std::invalid_argument);
  EXPECT_THROW((void)empty.size(), std::invalid_argument);
}

TEST_P(GraphRules, ReplayAfterAnOutsideVariableWasDeletedThrows) {
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b");
  int runs = 0;
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { ++runs; }, {}, {b});
    engine.push([&](RunContext&) { ++runs; }, {a}, {b});
  });
  engine.delete_var(a);
  EXPECT_THROW(engine.replay(g), std::invalid_argument);
  engine.wait_all();
  EXPECT_EQ(runs, 0);  // nothing of it was pushed
}

TEST_P(GraphRules, ErrorsPropagateAsForPushedOpsAndTheGraphStaysUsable) {
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b"), c = engine.new_var("c");
  bool fail = true;
  int b_runs = 0, c_runs = 0;
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { if (fail) throw std::runtime_error("boom"); }, {}, {a});
    engine.push([&](RunContext&) { ++b_runs; }, {a}, {b});  // skipped: reads a failed variable
    engine.push([&](RunContext&) { ++c_runs; }, {}, {c});   // independent: runs
  });
  engine.replay(g);
  EXPECT_THROW(engine.wait_to_read(b), std::runtime_error);
  EXPECT_THROW(engine.wait_to_read(a), std::runtime_error);
  engine.wait_to_read(c);
  EXPECT_EQ(b_runs, 0);
  EXPECT_EQ(c_runs, 1);
  engine.wait_all();  // reported already
  fail = false;
  engine.replay(g);
  engine.wait_all();
  EXPECT_EQ(b_runs, 1);
  EXPECT_EQ(c_runs, 2);
}

TEST_P(GraphRules, AFailedOutsideInputSkipsOnlyTheOpsThatTouchIt) {
  Engine engine(options());
  Var in = engine.new_var("in"), x = engine.new_var("x"), y = engine.new_var("y");
  int x_runs = 0, y_runs = 0;
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { ++x_runs; }, {in}, {x});
    engine.push([&](RunContext&) { ++y_runs; }, {}, {y});
  });
  engine.push([](RunContext&) { throw std::runtime_error("input failed"); }, {}, {in});
  engine.replay(g);
  try {
    engine.wait_to_read(x);
    ADD_FAILURE() << "x should carry the input's error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "input failed");
  }
  engine.wait_to_read(y);
  EXPECT_EQ(x_runs, 0);
  EXPECT_EQ(y_runs, 1);
  EXPECT_THROW(engine.wait_all(), std::runtime_error);  // `in` itself is still unreported
}

TEST_P(GraphRules, AFailureOnTheGraphsOwnVariablesIsReportedByWaitAll) {
  Engine engine(options());
  Graph g = engine.capture([&] {
    Var t = engine.new_var();
    engine.push([](RunContext&) { throw std::runtime_error("inside"); }, {}, {t});
  });
  engine.replay(g);
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
  engine.wait_all();
}

TEST_P(GraphRules, AHelperVariableDeletedInTheBodyDropsItsFailureWithTheGraph) {
  Engine engine(options());
  Var out = engine.new_var("out");
  {
    Graph g = engine.capture([&] {
      Var helper = engine.new_var("helper");
      engine.push([](RunContext&) { throw std::runtime_error("step failed"); }, {}, {helper});
      engine.push([](RunContext&) {}, {helper}, {out});  // skipped: marks out
      engine.delete_helper_var(helper);
    });
    engine.replay(g);
    EXPECT_THROW(engine.wait_to_read(out), std::runtime_error);
  }  // the helper is deleted with the graph, as a helper: its mark went on to `out`
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(GraphRules, DestroyingAGraphWhileItsReplaysAreInFlightIsSafe) {
  Engine engine(options());
  Var v = engine.new_var();
  std::atomic<int> runs{0};
  // The naive engine runs this at once: it holds nothing back there.
  std::atomic<bool> go{kind() == EngineKind::Naive};
  engine.push([&](RunContext&) { while (!go.load()) std::this_thread::yield(); }, {}, {v});
  {
    Graph g = engine.capture([&] {
      Var own = engine.new_var();
      engine.push([&](RunContext&) { ++runs; }, {v}, {own});
      engine.push([&](RunContext&) { ++runs; }, {own}, {});
    });
    for (int i = 0; i < 10; ++i) engine.replay(g);
  }  // destroyed here, its replays still waiting for v
  go = true;
  engine.wait_all();
  EXPECT_EQ(runs.load(), 20);
}

TEST_P(GraphRules, WideGraphsDestroyedWithReplaysInFlightRunEveryNodeOnce) {
  // Wide enough for helpers to share the ready nodes, destroyed at once.
  Engine engine({.kind = kind(), .cpu_threads = 4, .read_environment = false});
  constexpr int kWidth = 300, kReplays = 40;
  Var in = engine.new_var("in");
  std::vector<std::atomic<int>> counts(kWidth);
  std::atomic<int> joins{0};
  for (int round = 0; round < 3; ++round) {
    Graph g = engine.capture([&] {
      std::vector<Var> mids;
      for (int i = 0; i < kWidth; ++i) {
        mids.push_back(engine.new_var());
        engine.push([&, i](RunContext&) { counts[i].fetch_add(1); }, {in}, {mids.back()});
      }
      engine.push([&](RunContext&) { joins.fetch_add(1); }, mids, {});
      for (Var m : mids) engine.delete_var(m);
    });
    for (int r = 0; r < kReplays; ++r) engine.replay(g);
  }
  engine.wait_all();
  for (int i = 0; i < kWidth; ++i) ASSERT_EQ(counts[i].load(), 3 * kReplays) << i;
  EXPECT_EQ(joins.load(), 3 * kReplays);
}

TEST_P(GraphRules, AGraphIsMovableAndPrintsAsDot) {
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b");
  Graph g = engine.capture([&] {
    engine.push([](RunContext&) {}, {}, {a}, {.name = "produce"});
    engine.push([](RunContext&) {}, {a}, {b}, {.name = "consume"});
  });
  Graph moved = std::move(g);
  EXPECT_THROW((void)g.size(), std::invalid_argument);  // NOLINT(bugprone-use-after-move)
  const std::string dot = moved.to_dot();
  EXPECT_NE(dot.find("digraph"), std::string::npos);
  EXPECT_NE(dot.find("produce"), std::string::npos);
  EXPECT_NE(dot.find("op0 -> op1"), std::string::npos);
  EXPECT_NE(dot.find("label=\"b\""), std::string::npos);
}

TEST_P(GraphRules, ReplaysFromSeveralThreadsAtOnceChain) {
  Engine engine(options());
  Var v = engine.new_var();
  long total = 0;
  Graph g = engine.capture([&] {
    for (int i = 0; i < 10; ++i) engine.push([&](RunContext&) { ++total; }, {}, {v});
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) engine.replay(g);
    });
  }
  for (auto& t : threads) t.join();
  engine.wait_to_read(v);
  EXPECT_EQ(total, 4000);
}

TEST_P(GraphRules, AsyncOpsInsideAGraphReplay) {
  Engine engine(options());
  Var v = engine.new_var();
  int x = 0;
  Graph g = engine.capture([&] {
    engine.push_async([&](RunContext&, Completion done) { x += 1; done(); }, {}, {v});
    engine.push([&](RunContext&) { x *= 3; }, {}, {v});
  });
  engine.replay(g);
  engine.replay(g);
  engine.wait_to_read(v);
  EXPECT_EQ(x, 12);
}

TEST_P(GraphRules, DeviceOpsInAGraphReplayInOrder) {
  Engine engine(options());
  add_emulated_device(engine, 0, {.compute_streams = 2});
  Var a = engine.new_var("a"), b = engine.new_var("b");
  std::vector<int> log;
  std::mutex log_mutex;
  auto note = [&](int what) {
    std::lock_guard lock(log_mutex);
    log.push_back(what);
  };
  const PushOptions on_device{.device = Device::emulated(0)};
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) { note(1); }, {}, {a});
    engine.push([&](RunContext&) { note(2); }, {a}, {b}, on_device);  // after 1
    engine.push([&](RunContext&) { note(3); }, {b}, {a});             // after 2
  });
  for (int i = 0; i < 5; ++i) {
    engine.replay(g);
    engine.push([&](RunContext&) { note(0); }, {a, b}, {});
  }
  engine.wait_all();
  std::vector<int> expected;
  for (int i = 0; i < 5; ++i) expected.insert(expected.end(), {1, 2, 3, 0});
  EXPECT_EQ(log, expected);
}

TEST_P(GraphRules, AGraphOnOneEmulatedDeviceIsOneLaunchPerReplay) {
  Engine engine(options());
  std::atomic<int> launches{0}, replay_launches{0};
  add_emulated_device(engine, 0,
                      {.compute_streams = 2, .on_launch = [&](std::string_view name, const EmulatedStream&) {
                         ++launches;
                         if (name == "graph replay") ++replay_launches;
                       }});
  Var a = engine.new_var("a"), b = engine.new_var("b");
  std::vector<int> log;  // written by ops ordered through a and b only
  const PushOptions on_device{.device = Device::emulated(0)};
  Graph g = engine.capture([&] {
    engine.push([&](RunContext& ctx) { log.push_back(ctx.stream != nullptr ? 1 : -1); }, {}, {a}, on_device);
    engine.push([&](RunContext&) { log.push_back(2); }, {a}, {b}, on_device);
    engine.push([&](RunContext&) { log.push_back(3); }, {b}, {a}, on_device);
  });
  for (int i = 0; i < 5; ++i) {
    engine.push([&](RunContext&) { log.push_back(0); }, {}, {a, b});
    engine.replay(g);
  }
  engine.wait_all();
  std::vector<int> expected;
  for (int i = 0; i < 5; ++i) expected.insert(expected.end(), {0, 1, 2, 3});
  EXPECT_EQ(log, expected);
  if (kind() == EngineKind::Threaded) {
    EXPECT_EQ(replay_launches.load(), 5);  // one launch per replay, not one per op
    EXPECT_EQ(launches.load(), 5);
  } else {
    EXPECT_EQ(launches.load(), 15);  // the naive engine pushes each op again
  }
}

TEST_P(GraphRules, AGraphOnOneEmulatedDeviceKeepsItsStreams) {
  Engine engine(options());
  std::atomic<int> launches{0};
  add_emulated_device(engine, 0, {.compute_streams = 2, .on_launch = [&](std::string_view, const EmulatedStream&) {
                                    ++launches;
                                  }});
  // Two chains of three, joined, then copied: each node notes its stream.
  Var x = engine.new_var("x"), y = engine.new_var("y"), z = engine.new_var("z"), w = engine.new_var("w");
  int vx = 0, vy = 0, vz = 0, vw = 0;
  std::vector<int> stream_of(8, -1);
  const PushOptions on_device{.device = Device::emulated(0)};
  Graph g = engine.capture([&] {
    for (int i = 0; i < 3; ++i) {
      engine.push([&, i](RunContext& ctx) { vx += 1, stream_of[i] = ctx.stream_index; }, {}, {x}, on_device);
      engine.push([&, i](RunContext& ctx) { vy += 10, stream_of[3 + i] = ctx.stream_index; }, {}, {y}, on_device);
    }
    engine.push([&](RunContext& ctx) { vz = vx + vy, stream_of[6] = ctx.stream_index; }, {x, y}, {z}, on_device);
    engine.push([&](RunContext& ctx) { vw = vz, stream_of[7] = ctx.stream_index; }, {z}, {w},
                {.device = Device::emulated(0), .property = OpProperty::CopyToDevice});
  });
  for (int i = 0; i < 4; ++i) engine.replay(g);
  engine.wait_to_read(w);
  EXPECT_EQ(vw, 4 * 33);
  if (kind() == EngineKind::Naive) return;  // pushed op by op: nothing to place
  EXPECT_EQ(launches.load(), 4 * 3);  // per replay: one task on each stream used, not one per node
  EXPECT_EQ(stream_of[0], stream_of[1]);  // a chain stays on its stream
  EXPECT_EQ(stream_of[0], stream_of[2]);
  EXPECT_EQ(stream_of[3], stream_of[4]);
  EXPECT_EQ(stream_of[3], stream_of[5]);
  EXPECT_NE(stream_of[0], stream_of[3]);  // independent chains spread over the compute streams
  EXPECT_LT(stream_of[0], 2);
  EXPECT_LT(stream_of[3], 2);
  EXPECT_LT(stream_of[6], 2);
  EXPECT_EQ(stream_of[7], 2);  // 2 compute streams, then the host-to-device copy stream
}

TEST_P(GraphRules, IndependentNodesOfAGraphOnOneEmulatedDeviceRunAtOnce) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs a replay's ops one by one, inline";
  Engine engine(options());
  add_emulated_device(engine, 0, {.compute_streams = 2});
  Var a = engine.new_var("a"), b = engine.new_var("b");
  std::atomic<bool> second_ran{false};
  bool first_saw_second = false;
  const PushOptions on_device{.device = Device::emulated(0)};
  Graph g = engine.capture([&] {
    // Recorded first, yet it waits for the second: only two streams at once
    // let it see it (on one stream it gives up after 10 s and the test fails).
    engine.push(
        [&](RunContext&) {
          const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
          while (!second_ran.load() && std::chrono::steady_clock::now() < give_up) std::this_thread::yield();
          first_saw_second = second_ran.load();
        },
        {}, {a}, on_device);
    engine.push([&](RunContext&) { second_ran = true; }, {}, {b}, on_device);
  });
  engine.replay(g);
  engine.wait_all();
  EXPECT_TRUE(first_saw_second);
}

TEST_P(GraphRules, ErrorsOfAGraphOnOneEmulatedDeviceFollowTheOps) {
  Engine engine(options());
  add_emulated_device(engine, 0, {.compute_streams = 2});
  const PushOptions on_device{.device = Device::emulated(0)};
  Var in = engine.new_var("in"), a = engine.new_var("a"), b = engine.new_var("b"), c = engine.new_var("c");
  int b_runs = 0, c_runs = 0, from_in = 0;
  Graph g = engine.capture([&] {
    engine.push([](RunContext&) { throw std::runtime_error("device op failed"); }, {}, {a}, on_device);
    engine.push([&](RunContext&) { ++b_runs; }, {a}, {b}, on_device);  // skipped
    engine.push([&](RunContext&) { ++c_runs; }, {}, {c}, on_device);   // runs
    engine.push([&](RunContext&) { ++from_in; }, {in}, {}, on_device);  // skipped when `in` failed
  });
  engine.replay(g);
  EXPECT_THROW(engine.wait_to_read(b), std::runtime_error);
  EXPECT_THROW(engine.wait_to_read(a), std::runtime_error);
  engine.wait_to_read(c);
  EXPECT_EQ(b_runs, 0);
  EXPECT_EQ(c_runs, 1);
  engine.wait_all();
  EXPECT_EQ(from_in, 1);
  // A failed outside input, written on the device just before the replay.
  engine.push([](RunContext&) { throw std::runtime_error("input failed"); }, {}, {in}, on_device);
  engine.replay(g);
  EXPECT_THROW(engine.wait_to_read(b), std::runtime_error);
  engine.wait_to_read(c);
  EXPECT_EQ(c_runs, 2);
  EXPECT_EQ(from_in, 1);
  EXPECT_THROW(engine.wait_all(), std::runtime_error);  // `in` and `a`, not reported yet
}

TEST_P(GraphRules, IndependentOpsOfAGraphAllRunEachReplay) {
  Engine engine(options());
  constexpr int kOps = 500;
  std::vector<Var> vars;
  std::vector<int> counts(kOps, 0);
  for (int i = 0; i < kOps; ++i) vars.push_back(engine.new_var());
  Graph g = engine.capture([&] {
    for (int i = 0; i < kOps; ++i) engine.push([&, i](RunContext&) { ++counts[i]; }, {}, {vars[i]});
  });
  EXPECT_EQ(g.dependencies(), 0u);
  for (int r = 0; r < 7; ++r) engine.replay(g);
  engine.wait_all();
  for (int i = 0; i < kOps; ++i) ASSERT_EQ(counts[i], 7) << i;
}

TEST_P(GraphRules, BlockingCallsInsideAReplayedOpThrow) {
  Engine engine(options());
  Var v = engine.new_var(), w = engine.new_var();
  bool threw = false;
  Graph g = engine.capture([&] {
    engine.push([&](RunContext&) {
      try {
        engine.wait_to_read(w);
      } catch (const std::logic_error&) {
        threw = true;
      }
    }, {}, {v});
  });
  engine.replay(g);
  engine.wait_all();
  EXPECT_TRUE(threw);
}


// A variable only the graph touches is held by its replays without queue
// entries (engine/var_adoption.h). Whatever else touches it afterwards must
// still be ordered after the replays pushed before it and before those
// pushed after it, whether they are in flight or done.
TEST_P(GraphRules, AnOpOnAVariableOnlyTheGraphTouchedWaitsForTheReplaysInFlight) {
  Engine engine(options());
  std::mutex m;
  std::vector<std::string> log;
  auto note = [&](std::string what) {
    std::lock_guard lock(m);
    log.push_back(std::move(what));
  };
  Var gate = engine.new_var("gate"), v = engine.new_var("v");
  std::atomic<bool> go{kind() == EngineKind::Naive};
  Graph g = engine.capture([&] { engine.push([&](RunContext&) { note("replay"); }, {}, {v}); });
  engine.replay(g);  // alone: v is the graph's from now on
  engine.wait_all();
  engine.push([&](RunContext&) { while (!go.load()) std::this_thread::yield(); }, {}, {gate});
  Graph held = engine.capture([&] { engine.push([&](RunContext&) { note("held replay"); }, {gate}, {v}); });
  engine.replay(held);  // v is another graph's: held takes it over once it can
  engine.replay(g);
  engine.push([&](RunContext&) { note("eager read"); }, {v}, {});
  engine.replay(g);
  engine.push([&](RunContext&) { note("eager write"); }, {}, {v});
  go = true;
  engine.wait_to_read(v);
  EXPECT_EQ(log, (std::vector<std::string>{"replay", "held replay", "replay", "eager read", "replay", "eager write"}));
}

// A graph of one op that writes `v` slowly, so that its replays are still
// in flight when the test registers on `v`, and counts its runs.
Graph capture_slow_writer(Engine& engine, Var v, std::atomic<int>& runs) {
  return engine.capture([&engine, v, &runs] {
    engine.push([&runs](RunContext&) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      ++runs;
    }, {}, {v});
  });
}

TEST_P(GraphRules, AWaitOnAVariableOnlyTheGraphTouchesWaitsForItsReplays) {
  Engine engine(options());
  std::atomic<int> runs{0};
  Var v = engine.new_var("v");
  Graph g = capture_slow_writer(engine, v, runs);
  for (int round = 1; round <= 5; ++round) {
    for (int i = 0; i < 4; ++i) engine.replay(g);
    engine.wait_to_read(v);
    EXPECT_EQ(runs.load(), 4 * round);
  }
}

TEST_P(GraphRules, DeletingAVariableOnlyTheGraphTouchesWaitsForItsReplays) {
  Engine engine(options());
  std::atomic<int> runs{0};
  std::atomic<int> runs_at_release{-1};
  Var v = engine.new_var("v");
  Graph g = capture_slow_writer(engine, v, runs);
  for (int i = 0; i < 5; ++i) engine.replay(g);
  engine.delete_var(v, [&] { runs_at_release = runs.load(); });
  engine.wait_all();
  EXPECT_EQ(runs_at_release.load(), 5);
  EXPECT_THROW(engine.replay(g), std::invalid_argument);
}

TEST_P(GraphRules, AFailureOnAVariableOnlyTheGraphTouchesReachesItsReaders) {
  Engine engine(options());
  Var v = engine.new_var("v"), out = engine.new_var("out");
  bool fail = false;
  int reads = 0;
  Graph writer = engine.capture([&] {
    engine.push([&](RunContext&) { if (fail) throw std::runtime_error("write failed"); }, {}, {v});
  });
  Graph reader = engine.capture([&] { engine.push([&](RunContext&) { ++reads; }, {v}, {out}); });
  for (int i = 0; i < 3; ++i) engine.replay(writer);
  engine.wait_all();
  fail = true;
  engine.replay(writer);
  engine.replay(writer);  // the second failure replaces the first, unreported one
  engine.replay(reader);  // skipped: its input failed
  EXPECT_THROW(engine.wait_to_read(out), std::runtime_error);
  EXPECT_THROW(engine.wait_to_read(v), std::runtime_error);
  EXPECT_EQ(reads, 0);
  engine.wait_to_read(v);  // reported: cleared
  fail = false;
  engine.replay(writer);
  engine.replay(reader);
  engine.wait_to_read(out);
  EXPECT_EQ(reads, 1);
  EXPECT_NO_THROW(engine.wait_all());
}

TEST_P(GraphRules, VariablesAGraphHeldGoBackToEagerOpsWhenItIsDestroyed) {
  Engine engine(options());
  Var v = engine.new_var("v");
  int value = 0;
  {
    Graph g = engine.capture([&] { engine.push([&](RunContext&) { value = value * 2 + 1; }, {}, {v}); });
    for (int i = 0; i < 3; ++i) engine.replay(g);
  }  // destroyed with replays possibly in flight
  for (int i = 0; i < 3; ++i) engine.push([&](RunContext&) { value += 10; }, {}, {v});
  engine.wait_to_read(v);
  EXPECT_EQ(value, 37);
  engine.delete_var(v);
  engine.wait_all();
}

// Ready nodes go to a helper when they take long enough to be worth one
// (GraphRun::worth_a_helper): two nodes that each wait for the other to
// start finish only if they run at once, replay after replay.
TEST_P(GraphRules, SlowReadyNodesOfAReplayShareTheWorkers) {
  if (kind() == EngineKind::Naive) GTEST_SKIP() << "the naive engine runs a replay's ops one by one, inline";
  Engine engine(options());
  Var a = engine.new_var("a"), b = engine.new_var("b");
  std::atomic<int> started{0};
  std::atomic<int> met{0};
  auto meet = [&](RunContext&) {
    const int round = started.fetch_add(1) / 2;
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    // Sleeps long enough that a node measures well above a helper's cost.
    while (started.load() < 2 * (round + 1) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    if (started.load() >= 2 * (round + 1)) ++met;
  };
  Graph g = engine.capture([&] {
    engine.push(meet, {}, {a});
    engine.push(meet, {}, {b});
  });
  for (int i = 0; i < 4; ++i) {
    engine.replay(g);
    engine.wait_all();
  }
  EXPECT_EQ(met.load(), 8);
}

}  // namespace
}  // namespace depengine
