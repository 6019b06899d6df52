// Push-time validation: a bad op throws std::invalid_argument naming the op
// and the offending shapes, and enqueues nothing.

#include <string>

#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

namespace ops = depengine::ops;

// Runs `push`, expects std::invalid_argument whose message has every `parts`.
template <class F>
void expect_rejected(F&& push, std::initializer_list<std::string> parts) {
  try {
    push();
    ADD_FAILURE() << "no exception";
  } catch (const std::invalid_argument& e) {
    for (const std::string& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what();
  }
}

class OpsErrorsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Engine> engine = make_engine();
  Tensor a = Tensor::zeros(*engine, {2, 3});
  Tensor b = Tensor::zeros(*engine, {3, 2});
  Tensor d = Tensor::zeros(*engine, {2, 3}, DType::float64);
  Tensor e = Tensor::zeros(*engine, {2, 3}, DType::float32, Device::emulated(0));
};

TEST_F(OpsErrorsTest, MismatchedShapes) {
  expect_rejected([&] { ops::add(a, b); }, {"ops::add", "[2, 3]", "[3, 2]"});
  expect_rejected([&] { ops::axpy(1.0, a, b); }, {"ops::axpy", "[2, 3]"});
  expect_rejected([&] { ops::gemm(a, a, Tensor::empty(*engine, {2, 3})); }, {"ops::gemm", "inner dimensions"});
  expect_rejected([&] { ops::gemm(a, b, Tensor::empty(*engine, {3, 3})); }, {"ops::gemm", "[2, 2]", "[3, 3]"});
  expect_rejected([&] { ops::sum(a, 2); }, {"ops::sum", "axis 2"});
  expect_rejected([&] { ops::sum(a, 0, Tensor::empty(*engine, {2})); }, {"ops::sum", "[3]"});
  expect_rejected([&] { ops::copy(a, Tensor::empty(*engine, {7})); }, {"ops::copy", "element counts"});
  Tensor labels = Tensor::zeros(*engine, {3}, DType::int32);
  expect_rejected([&] { ops::softmax_cross_entropy(a, labels, Tensor::empty(*engine, {}), Tensor()); },
                  {"ops::softmax_cross_entropy", "labels", "[2]"});
}

TEST_F(OpsErrorsTest, MismatchedDtypes) {
  expect_rejected([&] { ops::add(a, d); }, {"ops::add", "float32[2, 3]", "float64[2, 3]"});
  expect_rejected([&] { ops::relu(Tensor::zeros(*engine, {2}, DType::int32)); }, {"ops::relu", "int32"});
  Tensor h = Tensor::zeros(*engine, {3, 3}, DType::float16);
  expect_rejected([&] { ops::gemm(h, h, Tensor::empty(*engine, {3, 3}, DType::float16)); },
                  {"ops::gemm", "float32 c"});
  expect_rejected([&] { ops::softmax_cross_entropy(a, Tensor::zeros(*engine, {2}), Tensor::empty(*engine, {}), Tensor()); },
                  {"labels must be int32"});
}

TEST_F(OpsErrorsTest, MismatchedDevicesAndNullTensors) {
  expect_rejected([&] { ops::add(a, e); }, {"ops::add", "cpu", "emulated:0"});
  expect_rejected([&] { ops::fill(Tensor(), 1.0); }, {"ops::fill", "null"});
  expect_rejected([&] { ops::sum(Tensor()); }, {"ops::sum", "null"});
  Engine other;
  expect_rejected([&] { ops::add(a, Tensor::zeros(other, {2, 3})); }, {"different engines"});
}

TEST_F(OpsErrorsTest, InvalidTensorsAreRejected) {
  expect_rejected([&] { Tensor::empty(*engine, {2, -1}); }, {"negative dimension"});
  expect_rejected([&] { a.reshape({4}); }, {"reshape", "[4]"});
  std::vector<float> three(3);
  expect_rejected([&] { Tensor::from_host(*engine, std::span<const float>(three), {2, 2}); }, {"3 values", "[2, 2]"});
  expect_rejected([&] { a.item<float>(); }, {"item", "one element"});
  expect_rejected([&] { Tensor::zeros(*engine, {2}, DType::float32, Device::emulated(7)); }, {"emulated:7"});
}

TEST_F(OpsErrorsTest, RejectedOpEnqueuesNothing) {
  ops::fill(a, 1.0);
  EXPECT_THROW(ops::add(a, b, a), std::invalid_argument);
  EXPECT_THROW(ops::gemm(a, b, a), std::invalid_argument);
  std::vector<float> expected(6, 1.0f);
  EXPECT_EQ(a.to_host<float>(), expected);
}

TEST_F(OpsErrorsTest, BlockingInsideAnOpIsAUsageError) {
  std::atomic<bool> threw{false};
  engine->push([&](RunContext&) {
    try {
      a.to_host<float>();
    } catch (const std::logic_error&) {
      threw = true;
    }
  }, {}, {});
  engine->wait_all();
  EXPECT_TRUE(threw);
}

}  // namespace
}  // namespace depengine::testing
