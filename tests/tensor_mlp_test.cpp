// The MLP training loop (examples/mlp.h): the loss falls, and blocking after
// every step (the synchronous style) computes exactly what blocking once per
// epoch does.

#include "examples/mlp.h"
#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

using namespace depengine::examples;

std::vector<double> train_losses(Engine& engine, Device device, bool block_each_step, int epochs) {
  const Dataset data = make_blobs(240, 16, 4, 3);
  Mlp mlp(engine, {.layers = {16, 32, 4}, .learning_rate = 0.2, .device = device});
  const auto batches = make_batches(engine, data, 32, DType::float32, device);
  std::vector<double> losses;
  for (int e = 0; e < epochs; ++e) losses.push_back(train_epoch(mlp, batches, block_each_step));
  EXPECT_GT(mlp.accuracy(data), 0.9);
  return losses;
}

TEST(MlpTest, LossFallsAndSyncEqualsAsync) {
  for (Device device : test_devices()) {
    auto engine = make_engine();
    const std::vector<double> async = train_losses(*engine, device, false, 4);
    EXPECT_LT(async.back(), async.front() * 0.5) << device.to_string();
    EXPECT_EQ(train_losses(*engine, device, true, 4), async) << device.to_string();
  }
}

TEST(MlpTest, DatasetsAreShapedAndSplit) {
  const Dataset digits = load_digits_or_generate();
  EXPECT_EQ(digits.cols, 64);
  EXPECT_EQ(digits.classes, 10);
  EXPECT_EQ(static_cast<std::int64_t>(digits.labels.size()), digits.rows);
  const auto [train, test] = split(digits, 0.25, 1);
  EXPECT_EQ(train.rows + test.rows, digits.rows);
  EXPECT_NEAR(static_cast<double>(test.rows) / digits.rows, 0.25, 0.01);
  EXPECT_THROW(load_digits("/nonexistent/digits.csv.gz"), std::runtime_error);
}

}  // namespace
}  // namespace depengine::testing
