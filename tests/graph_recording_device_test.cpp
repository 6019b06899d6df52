// A device that records a graph's work once and launches the record at later
// replays, as the CUDA device does with CUDA graphs (devices/cuda/
// cuda_graph_replay.h), through StreamGraph's invoke, failed and
// device_state (include/depengine/executor.h). Its "streams" are host
// objects that either run the work enqueued on them or record it.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <memory>
#include <stdexcept>
#include <vector>

#include <depengine/engine.h>
#include <depengine/executor.h>
#include <depengine/graph.h>

namespace depengine {
namespace {

constexpr Device kRecorder = Device::custom(3);

// What an op's function enqueues its work on (ctx.stream).
struct WorkStream {
  bool recording = false;
  std::vector<std::function<void()>> recorded;
  void enqueue(std::function<void()> work) {
    if (recording) {
      recorded.push_back(std::move(work));
    } else {
      work();
    }
  }
};

void enqueue(const RunContext& ctx, std::function<void()> work) {
  static_cast<WorkStream*>(ctx.stream)->enqueue(std::move(work));
}

// A graph's record: every node's work, in recorded order.
struct Record {
  std::vector<std::function<void()>> work;
  std::atomic<int>* released = nullptr;
  ~Record() {
    if (released) ++*released;
  }
};

// Runs ops inline on the submitting thread (a stream that is always idle).
// A replay: recorded at the first replay without failed inputs (a node that
// threw while recorded runs through its function and the record is made
// again next time), launched from the record after that, and run node by
// node whenever its inputs failed.
class RecordingExecutor final : public Executor {
 public:
  explicit RecordingExecutor(std::atomic<int>* records_released) : released_(records_released) {}

  void submit(ReadyOp op) override {
    WorkStream live;
    RunContext ctx{.device = op.device(), .stream = &live, .property = op.property(), .name = op.name()};
    const StreamGraph graph = op.stream_graph();
    if (!graph) return op.run_and_complete(ctx);
    graph.begin(ctx);
    if (graph.failed()) {
      ++node_by_node;
      for (std::uint32_t n = 0; n < graph.size(); ++n) graph.run(n, ctx);
    } else {
      std::shared_ptr<void>& state = graph.device_state();
      if (!state) {
        ++recordings;
        auto record = std::make_shared<Record>();
        bool keep = true;
        for (std::uint32_t n = 0; n < graph.size(); ++n) {
          WorkStream recording{.recording = true};
          RunContext on_record = ctx;
          on_record.stream = &recording;
          if (graph.invoke(n, on_record)) {
            // Its failure is reported by running it at its turn.
            keep = false;
            record->work.push_back([graph, n, ctx] { graph.run(n, ctx); });
            continue;
          }
          for (auto& w : recording.recorded) record->work.push_back(std::move(w));
        }
        record->released = released_;
        state = record;
        for (auto& w : record->work) w();
        if (!keep) state.reset();
      } else {
        for (auto& w : static_cast<Record*>(state.get())->work) w();
      }
    }
    graph.end(ctx);
    op.complete();
  }

  int recordings = 0;
  int node_by_node = 0;

 private:
  std::atomic<int>* released_;
};

struct RecordingDevice : ::testing::Test {
  void SetUp() override {
    auto executor = std::make_unique<RecordingExecutor>(&released);
    device = executor.get();
    engine.add_device(kRecorder, std::move(executor));
  }
  Engine engine{{.cpu_threads = 2, .read_environment = false}};
  std::atomic<int> released{0};
  RecordingExecutor* device = nullptr;
  const PushOptions on_device{.device = kRecorder};
};

TEST_F(RecordingDevice, AGraphIsRecordedOnceAndLaunchedFromItsRecord) {
  std::atomic<int> calls{0};
  long value = 1;
  Var v = engine.new_var("v");
  Graph g = engine.capture([&] {
    for (int i = 1; i <= 3; ++i) {
      engine.push([&, i](RunContext& ctx) {
        ++calls;
        enqueue(ctx, [&value, i] { value = value * 10 + i; });
      }, {}, {v}, on_device);
    }
  });
  long expected = 1;
  for (int replay = 0; replay < 4; ++replay) {
    engine.replay(g);
    expected = ((expected * 10 + 1) * 10 + 2) * 10 + 3;
  }
  engine.wait_to_read(v);
  EXPECT_EQ(value, expected);
  EXPECT_EQ(calls.load(), 3);  // once each, while recorded
  EXPECT_EQ(device->recordings, 1);
}

TEST_F(RecordingDevice, AReplayWithFailedInputsRunsNodeByNode) {
  Var in = engine.new_var("in"), a = engine.new_var("a"), b = engine.new_var("b");
  int a_runs = 0, b_runs = 0;
  Graph g = engine.capture([&] {
    engine.push([&](RunContext& ctx) { enqueue(ctx, [&] { ++a_runs; }); }, {in}, {a}, on_device);
    engine.push([&](RunContext& ctx) { enqueue(ctx, [&] { ++b_runs; }); }, {}, {b}, on_device);
  });
  engine.replay(g);
  engine.wait_all();
  engine.push([](RunContext&) { throw std::runtime_error("input failed"); }, {}, {in});
  engine.replay(g);  // a is skipped: its input failed; b runs
  EXPECT_THROW(engine.wait_to_read(a), std::runtime_error);
  engine.wait_to_read(b);
  EXPECT_EQ(a_runs, 1);
  EXPECT_EQ(b_runs, 2);
  EXPECT_EQ(device->node_by_node, 1);
  EXPECT_THROW(engine.wait_to_read(in), std::runtime_error);  // reported: cleared
  engine.replay(g);  // from the record again
  engine.wait_all();
  EXPECT_EQ(a_runs, 2);
  EXPECT_EQ(b_runs, 3);
  EXPECT_EQ(device->recordings, 1);
}

TEST_F(RecordingDevice, InvokeRecordsNoFailure) {
  // The node throws the first time its function is called (while recorded),
  // then works: the device runs it at its turn, and nothing fails.
  int calls = 0, runs = 0;
  Var v = engine.new_var("v");
  Graph g = engine.capture([&] {
    engine.push([&](RunContext& ctx) {
      if (calls++ == 0) throw std::runtime_error("refused while recorded");
      enqueue(ctx, [&] { ++runs; });
    }, {}, {v}, on_device);
  });
  engine.replay(g);
  EXPECT_NO_THROW(engine.wait_to_read(v));
  EXPECT_EQ(runs, 1);
  engine.replay(g);  // recorded again: the first record was not kept
  engine.replay(g);
  EXPECT_NO_THROW(engine.wait_all());
  EXPECT_EQ(runs, 3);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(device->recordings, 2);
}

TEST_F(RecordingDevice, TheDeviceStateGoesWithTheGraph) {
  Var v = engine.new_var("v");
  {
    Graph g = engine.capture([&] { engine.push([](RunContext& ctx) { enqueue(ctx, [] {}); }, {}, {v}, on_device); });
    engine.replay(g);
    engine.replay(g);
    engine.wait_all();
    EXPECT_EQ(released.load(), 0);
  }
  engine.wait_all();
  EXPECT_EQ(released.load(), 1);
}

TEST_F(RecordingDevice, InvokeOfANodeOutOfRangeThrows) {
  Var v = engine.new_var("v");
  std::atomic<bool> threw{false};
  class Probe final : public Executor {
   public:
    explicit Probe(std::atomic<bool>& threw) : threw_(threw) {}
    void submit(ReadyOp op) override {
      WorkStream live;
      const RunContext ctx{.device = op.device(), .stream = &live};
      const StreamGraph graph = op.stream_graph();
      graph.begin(ctx);
      try {
        graph.invoke(graph.size(), ctx);
      } catch (const std::out_of_range&) {
        threw_ = true;
      }
      for (std::uint32_t n = 0; n < graph.size(); ++n) graph.run(n, ctx);
      graph.end(ctx);
      op.complete();
    }

   private:
    std::atomic<bool>& threw_;
  };
  engine.add_device(Device::custom(4), std::make_unique<Probe>(threw));
  Graph g = engine.capture([&] {
    engine.push([](RunContext& ctx) { enqueue(ctx, [] {}); }, {}, {v}, {.device = Device::custom(4)});
  });
  engine.replay(g);
  engine.wait_all();
  EXPECT_TRUE(threw.load());
}

}  // namespace
}  // namespace depengine
