// Tensor ops inside a capture: tensors made in the body belong to the graph
// (allocated once, reused by every replay, freed with it), and replays give
// what pushing the same ops eagerly gives, bit for bit.

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include <depengine/graph.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

namespace depengine {
namespace {

// One step: y = x @ w, w -= 0.01 * y, with y made in the step.
void step(const Tensor& x, Tensor& w) {
  Tensor y = ops::matmul(x, w);
  ops::sgd_update(w, y, 0.01);
}

std::vector<float> run(EngineKind kind, bool use_graph, int steps) {
  Engine engine({.kind = kind, .cpu_threads = 2, .read_environment = false});
  Tensor x = Tensor::uniform(engine, {8, 8}, /*seed=*/3, -1.0, 1.0);
  Tensor w = Tensor::uniform(engine, {8, 8}, /*seed=*/4, -1.0, 1.0);
  if (!use_graph) {
    for (int i = 0; i < steps; ++i) step(x, w);
    return w.to_host<float>();
  }
  Graph g = engine.capture([&] { step(x, w); });
  EXPECT_GE(g.size(), 2u);
  EXPECT_EQ(g.own_variables().size(), 1u);  // y's
  for (int i = 0; i < steps; ++i) engine.replay(g);
  return w.to_host<float>();
}

TEST(GraphTensors, ReplayedStepsMatchEagerOnesBitForBit) {
  const std::vector<float> expected = run(EngineKind::Naive, false, 25);
  EXPECT_EQ(run(EngineKind::Threaded, true, 25), expected);
  EXPECT_EQ(run(EngineKind::Naive, true, 25), expected);
}

TEST(GraphTensors, DroppingAnOutsideTensorInsideACaptureFailsTheCapture) {
  Engine engine({.read_environment = false});
  Tensor outside = Tensor::full(engine, {4}, 1.0);
  // The tensor's destructor deletes its variable inside the body: the
  // capture fails when it ends, not the destructor.
  EXPECT_THROW(engine.capture([&] { outside = Tensor::full(engine, {4}, 2.0); }), std::invalid_argument);
  outside = Tensor();
  engine.wait_all();
}

TEST(GraphTensors, ReadingATensorOnTheHostInsideACaptureThrows) {
  Engine engine({.read_environment = false});
  Tensor x = Tensor::full(engine, {2}, 1.0);
  EXPECT_THROW(engine.capture([&] { (void)x.to_host<float>(); }), std::logic_error);
}

}  // namespace
}  // namespace depengine
