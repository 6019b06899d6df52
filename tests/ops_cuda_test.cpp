// The ops on CUDA, checked against the same ops on the CPU (which the other
// suites check against float64 references). Skipped without a GPU.

#include <functional>

#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

namespace ops = depengine::ops;

class CudaOpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // An engine creates cuda:0 on first use; without a GPU (or CUDA in the
    // build) placing anything there is rejected.
    try {
      Tensor::zeros(engine, {1}, DType::float32, gpu).to_host<float>();
    } catch (const std::invalid_argument& e) {
      GTEST_SKIP() << "no CUDA device: " << e.what();
    }
  }

  // Runs `op` on CPU copies and on CUDA copies of `inputs`; compares the results.
  void expect_same(const std::string& what, const std::vector<Tensor>& inputs,
                   const std::function<Tensor(const std::vector<Tensor>&)>& op, double tol) {
    std::vector<Tensor> on_gpu;
    for (const Tensor& t : inputs) on_gpu.push_back(t.copy_to(gpu));
    const Tensor expected = op(inputs), actual = op(on_gpu);
    EXPECT_EQ(actual.device(), gpu);
    expect_close(expected.to_host<double>(), actual, tol, what);
  }

  Engine engine{EngineOptions{.cpu_threads = 2, .read_environment = false}};
  Device gpu = Device::cuda(0);
};

TEST_F(CudaOpsTest, ElementwiseReductionsAndLoss) {
  std::mt19937 rng(5);
  for (DType t : {DType::float32, DType::float64}) {
    for (int trial = 0; trial < 6; ++trial) {
      const Shape s = random_shape(rng, 2, 300);
      const Tensor x = Tensor::uniform(engine, s, trial, -2, 2, t), y = Tensor::uniform(engine, s, 99 + trial, -2, 2, t);
      const Shape row = {s[1]};
      const Tensor bias = Tensor::uniform(engine, row, 7, -1, 1, t);
      const double tol = tolerance(t, s[0] + s[1]);
      expect_same("add", {x, bias}, [](auto& in) { return ops::add(in[0], in[1]); }, tol);
      expect_same("sub", {x, y}, [](auto& in) { return ops::sub(in[0], in[1]); }, tol);
      expect_same("mul", {x, y}, [](auto& in) { return ops::mul(in[0], in[1]); }, tol);
      expect_same("scale", {x}, [](auto& in) { return ops::scale(in[0], 0.3); }, tol);
      expect_same("relu", {x}, [](auto& in) { return ops::relu(in[0]); }, 0);
      expect_same("relu_grad", {x, y}, [&](auto& in) {
        Tensor out = Tensor::empty(engine, in[0].shape(), in[0].dtype(), in[0].device());
        ops::relu_grad(in[0], in[1], out);
        return out;
      }, 0);
      expect_same("axpy+sgd", {x, y}, [](auto& in) {
        Tensor w = ops::scale(in[1], 1.0);
        ops::axpy(0.5, in[0], w);
        ops::sgd_update(w, in[0], 0.1, 0.01);
        return w;
      }, tol);
      expect_same("sum", {x}, [](auto& in) { return ops::sum(in[0]); }, tol);
      expect_same("sum0", {x}, [](auto& in) { return ops::sum(in[0], 0); }, tol);
      expect_same("mean1", {x}, [](auto& in) { return ops::mean(in[0], 1); }, tol);
      expect_same("bfloat16 cast", {x}, [](auto& in) { return ops::cast(ops::cast(in[0], DType::bfloat16), DType::float64); }, 0);
      expect_same("float16 cast", {x}, [](auto& in) { return ops::cast(ops::cast(in[0], DType::float16), DType::float64); }, 0);
      if (s[0] > 0 && s[1] > 0) {
        std::vector<std::int32_t> labels(s[0]);
        for (auto& l : labels) l = std::uniform_int_distribution<std::int32_t>(0, s[1] - 1)(rng);
        const Tensor lab = Tensor::from_host(engine, std::span<const std::int32_t>(labels), {s[0]});
        for (bool want_grad : {false, true}) {
          expect_same(want_grad ? "softmax_cross_entropy grad" : "softmax_cross_entropy loss", {x, lab}, [&](auto& in) {
            Tensor loss = Tensor::empty(engine, {}, in[0].dtype(), in[0].device());
            Tensor grad = Tensor::empty(engine, in[0].shape(), in[0].dtype(), in[0].device());
            ops::softmax_cross_entropy(in[0], in[1], loss, grad);
            return want_grad ? grad : loss;
          }, tol);
        }
      }
    }
  }
}

TEST_F(CudaOpsTest, GemmIncludingMixedPrecision) {
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      const Tensor a = Tensor::uniform(engine, ta ? Shape{70, 130} : Shape{130, 70}, 1, -1, 1);
      const Tensor b = Tensor::uniform(engine, tb ? Shape{90, 70} : Shape{70, 90}, 2, -1, 1);
      expect_same("gemm", {a, b}, [&](auto& in) { return ops::matmul(in[0], in[1], ta, tb); }, tolerance(DType::float32, 70));
      for (DType half : {DType::float16, DType::bfloat16}) {
        const Tensor ah = ops::cast(a, half), bh = ops::cast(b, half);
        expect_same("mixed gemm", {ah, bh}, [&](auto& in) { return ops::matmul(in[0], in[1], ta, tb); },
                    tolerance(DType::float32, 70));
      }
    }
  }
}

TEST_F(CudaOpsTest, SeededValuesMatchTheCpu) {
  EXPECT_EQ(Tensor::normal(engine, {1000}, 4, 0, 1, DType::float32, gpu).to_host<float>(),
            Tensor::normal(engine, {1000}, 4).to_host<float>());
}

}  // namespace
}  // namespace depengine::testing
