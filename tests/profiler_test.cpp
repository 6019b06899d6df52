// The profiler: what it records, the trace it writes, the aggregate table.

#include <gtest/gtest.h>

#include <future>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>

#include <nlohmann/json.hpp>

#include <depengine/engine.h>
#include <depengine/executor.h>
#include <depengine/profiler.h>

using namespace depengine;
using nlohmann::json;

namespace {

EngineOptions threaded(int threads = 2) {
  EngineOptions o;
  o.cpu_threads = threads;
  o.read_environment = false;
  return o;
}

// Each push registered as it is made. The tests that count release arrows
// hold their first op until everything is pushed, so that each later op is
// released by a completion; batched, the later ops could be registered only
// at the wait, after the first op completed, and would start ready.
EngineOptions registered_at_push() {
  EngineOptions o = threaded();
  o.batch_pushes = false;
  return o;
}

std::vector<json> events_of(const json& trace, const std::string& ph, const std::string& cat = "") {
  std::vector<json> out;
  for (const json& e : trace.at("traceEvents")) {
    if (e.at("ph") == ph && (cat.empty() || e.value("cat", "") == cat)) out.push_back(e);
  }
  return out;
}

std::map<std::pair<int, int>, std::string> track_names(const json& trace) {
  std::map<std::pair<int, int>, std::string> names;
  for (const json& e : events_of(trace, "M")) {
    if (e.at("name") == "thread_name") names[{e.at("pid"), e.at("tid")}] = e.at("args").at("name");
  }
  return names;
}

// Slices of one track (pid, tid) never overlap (they may touch).
void expect_no_overlap(const json& trace) {
  std::map<std::pair<int, int>, std::vector<std::pair<double, double>>> by_track;
  for (const json& e : events_of(trace, "X", "op")) {
    by_track[{e.at("pid"), e.at("tid")}].push_back({e.at("ts"), e.at("ts").get<double>() + e.at("dur").get<double>()});
  }
  for (auto& [track, slices] : by_track) {
    std::sort(slices.begin(), slices.end());
    for (std::size_t i = 1; i < slices.size(); ++i) {
      EXPECT_LE(slices[i - 1].second, slices[i].first + 1e-9) << "overlap on track " << track.first << "/" << track.second;
    }
  }
}

void busy_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

// Without the engine's hooks (DEPENGINE_PROFILER_HOOKS=OFF) there is
// nothing to profile: every test but the one about that build skips.
class ProfilerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!Profiler::available()) GTEST_SKIP() << "the profiler's hooks were compiled out (DEPENGINE_PROFILER_HOOKS=OFF)";
  }
};

}  // namespace

TEST(ProfilerWithoutHooks, StartSaysTheHooksWereCompiledOut) {
  if (Profiler::available()) GTEST_SKIP() << "this build has the profiler's hooks";
  Engine engine(threaded());
  Profiler profiler(engine);
  try {
    profiler.start();
    FAIL() << "start() did not throw";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("DEPENGINE_PROFILER_HOOKS=OFF"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(profiler.running());
}

TEST_F(ProfilerTest, ChainHasOneSliceAndOneArrowPerRelease) {
  Engine engine(registered_at_push());
  Profiler profiler(engine);
  profiler.start();
  Var v = engine.new_var("v");
  std::atomic<bool> go{false};
  int value = 0;
  // The first op holds the chain until everything is pushed, so each later
  // op is made ready by the completion of the one before it.
  engine.push([&](RunContext&) { while (!go.load()) std::this_thread::yield(); value = 1; }, {}, {v}, {.name = "first"});
  constexpr int kOps = 20;
  for (int i = 1; i < kOps; ++i) engine.push([&](RunContext&) { ++value; }, {}, {v}, {.name = "inc"});
  go = true;
  engine.wait_to_read(v);
  profiler.stop();
  EXPECT_EQ(value, kOps);

  const json trace = json::parse(profiler.trace_json());
  const auto slices = events_of(trace, "X", "op");
  ASSERT_EQ(slices.size(), static_cast<std::size_t>(kOps));
  EXPECT_EQ(events_of(trace, "s", "release").size(), static_cast<std::size_t>(kOps - 1));
  EXPECT_EQ(events_of(trace, "f", "release").size(), static_cast<std::size_t>(kOps - 1));
  for (const json& s : slices) {
    EXPECT_EQ(s.at("args").at("device"), "cpu");
    EXPECT_EQ(s.at("args").at("writes"), json::array({"v"}));
    EXPECT_TRUE(s.at("args").at("reads").empty());
  }
  expect_no_overlap(trace);

  // Pushes and the blocking call sit on the frontend's track.
  const auto names = track_names(trace);
  const auto pushes = events_of(trace, "i", "push");
  ASSERT_EQ(pushes.size(), static_cast<std::size_t>(kOps));
  EXPECT_EQ(names.at({pushes.front().at("pid"), pushes.front().at("tid")}), "frontend 0");
  const auto blocks = events_of(trace, "X", "blocking");
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(blocks.front().at("name"), "wait_to_read");
  EXPECT_EQ(names.at({blocks.front().at("pid"), blocks.front().at("tid")}), "frontend 0");
  // Operations ran on worker tracks.
  for (const json& s : slices) EXPECT_EQ(names.at({s.at("pid"), s.at("tid")}).rfind("cpu worker ", 0), 0u);
}

TEST_F(ProfilerTest, ParallelOpsNeverOverlapOnATrack) {
  Engine engine(threaded(2));
  Profiler profiler(engine);
  profiler.start();
  std::vector<Var> vars;
  for (int i = 0; i < 8; ++i) vars.push_back(engine.new_var());
  for (int round = 0; round < 5; ++round) {
    for (Var v : vars) engine.push([](RunContext&) { busy_for(std::chrono::microseconds(200)); }, {}, {v}, {.name = "work"});
  }
  engine.wait_all();
  profiler.stop();
  const json trace = json::parse(profiler.trace_json());
  EXPECT_EQ(events_of(trace, "X", "op").size(), 40u);
  expect_no_overlap(trace);
  // Unnamed variables are shown by slot.
  EXPECT_EQ(events_of(trace, "X", "op").front().at("args").at("writes").front().get<std::string>().front(), '#');
}

TEST_F(ProfilerTest, FanOutArrowsComeFromTheWriter) {
  Engine engine(registered_at_push());
  Profiler profiler(engine);
  profiler.start();
  Var x = engine.new_var("x");
  std::atomic<bool> go{false};
  engine.push([&](RunContext&) { while (!go.load()) std::this_thread::yield(); }, {}, {x}, {.name = "write"});
  for (int i = 0; i < 3; ++i) engine.push([](RunContext&) {}, {x}, {}, {.name = "read"});
  go = true;
  engine.wait_all();
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), 4u);
  std::uint64_t writer = 0;
  for (const ProfiledOp& op : ops) if (op.name == "write") writer = op.id;
  for (const ProfiledOp& op : ops) {
    if (op.name == "read") {
      EXPECT_EQ(op.released_by, writer);
      EXPECT_EQ(op.reads, std::vector<std::string>{"x"});
    }
  }
}

TEST_F(ProfilerTest, VariablesOfOneNameHaveDistinctIds) {
  Engine engine(threaded());
  Profiler profiler(engine);
  profiler.start();
  Var a = engine.new_var("tensor"), b = engine.new_var("tensor");
  engine.push([](RunContext&) {}, {a}, {b}, {.name = "op"});
  engine.wait_all();
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].reads, ops[0].writes);  // both "tensor"
  ASSERT_EQ(ops[0].read_ids.size(), 1u);
  ASSERT_EQ(ops[0].write_ids.size(), 1u);
  EXPECT_NE(ops[0].read_ids[0], ops[0].write_ids[0]);
}

TEST_F(ProfilerTest, KeyAveragesCountAndSort) {
  Engine engine(threaded());
  Profiler profiler(engine);
  profiler.start();
  Var a = engine.new_var("a"), b = engine.new_var("b");
  for (int i = 0; i < 3; ++i) engine.push([](RunContext&) { busy_for(std::chrono::microseconds(2000)); }, {}, {a}, {.name = "slow"});
  for (int i = 0; i < 5; ++i) engine.push([](RunContext&) {}, {}, {b}, {.name = "fast"});
  engine.wait_all();
  profiler.stop();

  const auto by_total = profiler.key_averages(StatsOrder::total);
  ASSERT_EQ(by_total.size(), 2u);
  EXPECT_EQ(by_total[0].name, "slow");
  EXPECT_EQ(by_total[0].count, 3u);
  EXPECT_GE(by_total[0].max_us, by_total[0].mean_us);
  EXPECT_DOUBLE_EQ(by_total[0].mean_us, by_total[0].total_us / 3);
  EXPECT_GT(by_total[0].share, 0.0);
  EXPECT_LE(by_total[0].share, 1.0);  // one chain: it cannot exceed the wall time
  EXPECT_EQ(profiler.key_averages(StatsOrder::count)[0].name, "fast");
  EXPECT_EQ(profiler.key_averages(StatsOrder::name)[0].name, "fast");

  const std::string table = profiler.table(StatsOrder::total, 1);
  EXPECT_NE(table.find("slow"), std::string::npos);
  EXPECT_EQ(table.find("fast"), std::string::npos);  // one row asked for
  EXPECT_NE(table.find("share"), std::string::npos);
}

TEST_F(ProfilerTest, NaiveEngineRunsOnTheFrontendTrack) {
  EngineOptions o;
  o.kind = EngineKind::Naive;
  o.read_environment = false;
  Engine engine(o);
  Profiler profiler(engine);
  profiler.start();
  Var v = engine.new_var("v");
  for (int i = 0; i < 4; ++i) engine.push([](RunContext&) {}, {}, {v}, {.name = "op"});
  engine.wait_to_read(v);
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), 4u);
  for (const ProfiledOp& op : ops) EXPECT_EQ(op.track, "frontend 0");
  EXPECT_EQ(profiler.blocking_calls().size(), 1u);
}

TEST_F(ProfilerTest, SkippedOpsAreNotSlices) {
  Engine engine(threaded());
  Profiler profiler(engine);
  profiler.start();
  Var v = engine.new_var("v");
  engine.push([](RunContext&) { throw std::runtime_error("boom"); }, {}, {v}, {.name = "fails"});
  engine.push([](RunContext&) {}, {v}, {}, {.name = "skipped"});
  EXPECT_THROW(engine.wait_all(), std::runtime_error);
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_EQ(ops[0].name, "fails");
}

TEST_F(ProfilerTest, RecordsNothingWhenStoppedAndOneAtATime) {
  Engine engine(threaded());
  Profiler profiler(engine);
  Var v = engine.new_var();
  engine.push([](RunContext&) {}, {}, {v});
  engine.wait_all();
  EXPECT_TRUE(profiler.ops().empty());
  EXPECT_FALSE(profiler.running());

  profiler.start();
  Profiler other(engine);
  EXPECT_THROW(other.start(), std::logic_error);
  engine.push([](RunContext&) {}, {}, {v});
  engine.wait_all();
  profiler.stop();
  engine.push([](RunContext&) {}, {}, {v});
  engine.wait_all();
  EXPECT_EQ(profiler.ops().size(), 1u);
  profiler.clear();
  EXPECT_TRUE(profiler.ops().empty());
  other.start();  // the first one stopped: free again
  other.stop();
}

TEST_F(ProfilerTest, AsyncOpIsOneSlice) {
  Engine engine(threaded());
  Profiler profiler(engine);
  profiler.start();
  Var v = engine.new_var("v");
  // The completing thread belongs to the test, not to the op: the op may
  // still be returning when its completion has already been called.
  std::promise<Completion> handoff;
  std::thread completer([future = handoff.get_future()]() mutable { future.get()(); });
  engine.push_async([&](RunContext&, Completion done) { handoff.set_value(std::move(done)); }, {}, {v},
                    {.name = "async"});
  engine.wait_to_read(v);
  completer.join();
  // The op completed when its Completion was called; its function (whose
  // return ends the slice) may still be returning on the worker: give it a
  // bounded moment.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (profiler.ops().empty() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), 1u);
  EXPECT_TRUE(ops[0].async);
}

namespace {

// An in-order "stream" on one host thread: ops launched on it run one after
// another and report completion, like a device stream would.
class OneStreamExecutor final : public Executor {
 public:
  OneStreamExecutor() : thread_([this] { loop(); }) {}
  ~OneStreamExecutor() override { shutdown(); }
  void submit(ReadyOp op) override {
    std::lock_guard lock(mutex_);
    queue_.push_back(op);
    cv_.notify_one();
  }
  void shutdown() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
      cv_.notify_one();
    }
    if (thread_.joinable()) thread_.join();
  }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      ReadyOp op = queue_.front();
      queue_.pop_front();
      lock.unlock();
      RunContext ctx{.device = op.device(), .stream_index = 0, .property = op.property(), .name = op.name()};
      op.run_and_complete(ctx);
      lock.lock();
    }
  }
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<ReadyOp> queue_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace

TEST_F(ProfilerTest, StreamOpsGetStreamTracksNamedByKind) {
  Engine engine(threaded());
  engine.add_device(Device::custom(0), std::make_unique<OneStreamExecutor>());
  Profiler profiler(engine);
  profiler.start();
  Var a = engine.new_var("a"), b = engine.new_var("b");
  for (int i = 0; i < 5; ++i) {
    engine.push([](RunContext&) { busy_for(std::chrono::microseconds(100)); }, {}, {a},
                {.name = "kernel", .device = Device::custom(0)});
    engine.push([](RunContext&) {}, {a}, {b},
                {.name = "to_host", .device = Device::custom(0), .property = OpProperty::CopyFromDevice});
  }
  engine.wait_all();
  profiler.stop();
  const json trace = json::parse(profiler.trace_json({.label = "test", .pid_offset = 10}));
  EXPECT_EQ(events_of(trace, "X", "op").size(), 10u);
  expect_no_overlap(trace);
  std::set<std::string> names;
  for (const auto& [key, name] : track_names(trace)) names.insert(name);
  EXPECT_TRUE(names.count("compute stream 0"));
  EXPECT_TRUE(names.count("copy D2H stream 0"));
  bool labelled = false;
  for (const json& e : events_of(trace, "M")) {
    if (e.at("name") == "process_name" && e.at("args").at("name") == "test: custom:0") labelled = e.at("pid") > 10;
  }
  EXPECT_TRUE(labelled);
}

TEST_F(ProfilerTest, AnUnwritableEnvironmentProfileFailsTheEngineAtOnce) {
  if (!Profiler::available()) GTEST_SKIP() << "the profiler's hooks were compiled out (DEPENGINE_PROFILER_HOOKS=OFF)";
  ::setenv("DEPENGINE_PROFILE", "/nonexistent-depengine-dir/run.json", 1);
  try {
    Engine engine;
    ADD_FAILURE() << "an engine was made that could never write its profile";
  } catch (const std::invalid_argument& e) {
    // run.json, or run.N.json for the Nth engine of the process to profile there.
    EXPECT_NE(std::string(e.what()).find("'/nonexistent-depengine-dir/run."), std::string::npos) << e.what();
  }
  ::unsetenv("DEPENGINE_PROFILE");
}

TEST_F(ProfilerTest, EnvironmentVariableProfilesAWholeEngine) {
  const auto dir = std::filesystem::temp_directory_path() / ("depengine_profile_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "run.json").string();
  ::setenv("DEPENGINE_PROFILE", path.c_str(), 1);
  {
    EngineOptions o;
    o.cpu_threads = 2;
    Engine engine(o);
    Var v = engine.new_var("v");
    for (int i = 0; i < 3; ++i) engine.push([](RunContext&) {}, {}, {v}, {.name = "step"});
    // No wait: the destructor waits, and only then is the file written.
  }
  ::unsetenv("DEPENGINE_PROFILE");
  // The process's first engine so profiled writes FILE, later ones
  // FILE.N.json (this test run again with --gtest_repeat).
  static int engines_profiled = 0;
  ++engines_profiled;
  const auto written = dir / (engines_profiled == 1 ? std::string("run.json")
                                                    : "run." + std::to_string(engines_profiled) + ".json");
  std::ifstream in(written);
  ASSERT_TRUE(in.good()) << written;
  const json trace = json::parse(in);
  EXPECT_EQ(events_of(trace, "X", "op").size(), 3u);
  std::filesystem::remove_all(dir);
}

// Hooks append to per-thread buffers: frontend threads that push at once, and
// exit before stop(), still leave exactly one slice per op and ids 1..n.
TEST_F(ProfilerTest, ManyFrontendThreadsThatExitBeforeStop) {
  Engine engine(threaded());
  Profiler profiler(engine);
  profiler.start();
  constexpr int kThreads = 4, kOpsEach = 200;
  std::vector<std::thread> frontends;
  for (int t = 0; t < kThreads; ++t) {
    frontends.emplace_back([&engine] {
      Var v = engine.new_var();
      for (int i = 0; i < kOpsEach; ++i) engine.push([](RunContext&) {}, {}, {v}, {.name = "op"});
      engine.wait_to_read(v);
    });
  }
  for (std::thread& t : frontends) t.join();
  engine.wait_all();
  profiler.stop();
  const auto ops = profiler.ops();
  ASSERT_EQ(ops.size(), static_cast<std::size_t>(kThreads * kOpsEach));
  std::set<std::uint64_t> ids;
  for (const ProfiledOp& op : ops) ids.insert(op.id);
  EXPECT_EQ(ids.size(), ops.size());
  EXPECT_EQ(*ids.begin(), 1u);
  EXPECT_EQ(*ids.rbegin(), ops.size());
  const json trace = json::parse(profiler.trace_json());
  EXPECT_EQ(events_of(trace, "X", "op").size(), ops.size());
  EXPECT_EQ(events_of(trace, "i", "push").size(), ops.size());
  EXPECT_EQ(events_of(trace, "X", "blocking").size(), static_cast<std::size_t>(kThreads + 1));
  expect_no_overlap(trace);
}

// One thread records into the profilers of two engines, one of them
// destroyed and replaced in between: each recording keeps only its own ops.
TEST_F(ProfilerTest, OneThreadRecordsIntoSeveralProfilers) {
  Engine first(threaded());
  Profiler first_profiler(first);
  first_profiler.start();
  for (int round = 0; round < 2; ++round) {
    Engine second(threaded());
    Profiler second_profiler(second);
    second_profiler.start();
    Var a = first.new_var("a"), b = second.new_var("b");
    first.push([](RunContext&) {}, {}, {a}, {.name = "first"});
    second.push([](RunContext&) {}, {}, {b}, {.name = "second"});
    second.push([](RunContext&) {}, {}, {b}, {.name = "second"});
    second.wait_all();
    second_profiler.stop();
    const auto ops = second_profiler.ops();
    ASSERT_EQ(ops.size(), 2u);
    for (const ProfiledOp& op : ops) EXPECT_EQ(op.name, "second");
  }
  first.wait_all();
  first_profiler.stop();
  const auto ops = first_profiler.ops();
  ASSERT_EQ(ops.size(), 2u);
  for (const ProfiledOp& op : ops) EXPECT_EQ(op.name, "first");
}

TEST_F(ProfilerTest, WriteTraceReportsUnwritablePaths) {
  Engine engine(threaded());
  Profiler profiler(engine);
  EXPECT_THROW(profiler.write_trace("/nonexistent-dir/x/trace.json"), std::runtime_error);
}
