// Every op against a float64 reference computed here on the host, on random
// shapes (0- and 1-sized dimensions included) and random values, in float32
// and float64, on the CPU and on the emulated device.

#include <algorithm>
#include <cmath>
#include <limits>

#include "ops/op_support.h"
#include "tests/tensor_test_support.h"

namespace depengine::testing {
namespace {

namespace ops = depengine::ops;

constexpr int kTrials = 12;
constexpr DType kFloatTypes[] = {DType::float32, DType::float64};

class OpsTest : public ::testing::TestWithParam<Device> {
 protected:
  std::unique_ptr<Engine> engine = make_engine();
  Device device = GetParam();
  std::mt19937 rng{1234};

  Tensor make(const std::vector<double>& v, const Shape& s, DType t) { return tensor_of(*engine, v, s, t, device); }

  // ops::sum and ops::mean of x (holding v) along `axis` against a float64 reference.
  void expect_axis_sums(const std::vector<double>& v, const Shape& s, DType t, const Tensor& x, int axis) {
    std::int64_t outer = 1, inner = 1;
    for (int i = 0; i < axis; ++i) outer *= s[i];
    for (int i = axis + 1; i < static_cast<int>(s.size()); ++i) inner *= s[i];
    const std::int64_t len = s[axis];
    std::vector<double> sums(static_cast<std::size_t>(outer * inner), 0.0);
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < len; ++j)
        for (std::int64_t i = 0; i < inner; ++i) sums[o * inner + i] += v[(o * len + j) * inner + i];
    const std::string what = shape_to_string(s) + " axis " + std::to_string(axis);
    expect_close(sums, ops::sum(x, axis), tolerance(t, len), "sum " + what);
    if (len > 0) {
      for (double& e : sums) e /= static_cast<double>(len);
      expect_close(sums, ops::mean(x, axis), tolerance(t, len), "mean " + what);
    }
  }
};

TEST_P(OpsTest, FillAndCopyConvert) {
  for (DType t : {DType::float32, DType::float64, DType::float16, DType::bfloat16, DType::int32}) {
    const Shape s = random_shape(rng, 2);
    Tensor x = Tensor::full(*engine, s, 3.0, t, device);
    expect_close(std::vector<double>(shape_numel(s), 3.0), x, 0, "fill " + x.describe());
  }
  for (DType t : kFloatTypes) {
    const Shape s = random_shape(rng, 3);
    const auto v = random_values(rng, shape_numel(s));
    Tensor x = make(v, s, t);
    Tensor y = Tensor::empty(*engine, s, t, device);
    ops::copy(x, y);
    expect_close(rounded(v, t), y, 0, "copy");
    // Through bfloat16 and back: within bfloat16's 8 bits of precision.
    Tensor back = ops::cast(ops::cast(x, DType::bfloat16), t);
    expect_close(rounded(v, t), back, 1.0 / 256, "bfloat16 round trip");
    Tensor half_back = ops::cast(ops::cast(x, DType::float16), t);
    expect_close(rounded(v, t), half_back, 1.0 / 2048, "float16 round trip");
  }
}

TEST_P(OpsTest, BinaryOpsWithBroadcast) {
  for (DType t : kFloatTypes) {
    for (int trial = 0; trial < kTrials; ++trial) {
      const Shape sa = random_shape(rng, 1 + trial % 3);
      const Shape sb(sa.end() - static_cast<long>(trial % (sa.size() + 1)), sa.end());  // a suffix
      const auto va = rounded(random_values(rng, shape_numel(sa)), t);
      const auto vb = rounded(random_values(rng, shape_numel(sb)), t);
      Tensor a = make(va, sa, t), b = make(vb, sb, t);
      const std::size_t nb = vb.size();
      std::vector<double> add(va.size()), sub(va.size()), mul(va.size());
      for (std::size_t i = 0; i < va.size(); ++i) {
        add[i] = va[i] + vb[i % nb];
        sub[i] = va[i] - vb[i % nb];
        mul[i] = va[i] * vb[i % nb];
      }
      const std::string what = shape_to_string(sa) + " op " + shape_to_string(sb);
      expect_close(add, ops::add(a, b), tolerance(t), "add " + what);
      expect_close(sub, ops::sub(a, b), tolerance(t), "sub " + what);
      expect_close(mul, ops::mul(a, b), tolerance(t), "mul " + what);
      ops::add(a, b, a);  // in place
      expect_close(add, a, tolerance(t), "add in place " + what);
    }
  }
}

TEST_P(OpsTest, ScaleAxpyReluSgd) {
  for (DType t : kFloatTypes) {
    for (int trial = 0; trial < kTrials; ++trial) {
      const Shape s = random_shape(rng, 1 + trial % 3);
      const auto vx = rounded(random_values(rng, shape_numel(s)), t);
      const auto vy = rounded(random_values(rng, shape_numel(s)), t);
      Tensor x = make(vx, s, t), y = make(vy, s, t);
      std::vector<double> scaled, axpy, relu, relu_grad, sgd;
      for (std::size_t i = 0; i < vx.size(); ++i) {
        scaled.push_back(-1.5 * vx[i]);
        axpy.push_back(vy[i] + 0.5 * vx[i]);
        relu.push_back(std::max(vx[i], 0.0));
        relu_grad.push_back(vx[i] > 0 ? vy[i] : 0.0);
      }
      expect_close(scaled, ops::scale(x, -1.5), tolerance(t), "scale");
      expect_close(relu, ops::relu(x), 0, "relu");
      Tensor dx = Tensor::empty(*engine, s, t, device);
      ops::relu_grad(x, y, dx);
      expect_close(relu_grad, dx, 0, "relu_grad");
      ops::axpy(0.5, x, y);
      expect_close(axpy, y, tolerance(t), "axpy");
      // y now holds axpy: w = y, g = x.
      for (std::size_t i = 0; i < vx.size(); ++i) sgd.push_back(axpy[i] - 0.1 * (vx[i] + 0.01 * axpy[i]));
      ops::sgd_update(y, x, 0.1, 0.01);
      expect_close(sgd, y, tolerance(t, 4), "sgd_update");
    }
  }
}

TEST_P(OpsTest, SumAndMean) {
  for (DType t : kFloatTypes) {
    for (int trial = 0; trial < kTrials; ++trial) {
      const int rank = 1 + trial % 3;
      const Shape s = random_shape(rng, rank);
      const auto v = rounded(random_values(rng, shape_numel(s)), t);
      Tensor x = make(v, s, t);
      double total = 0;
      for (double e : v) total += e;
      const std::int64_t n = static_cast<std::int64_t>(v.size());
      expect_close({total}, ops::sum(x), tolerance(t, n), "sum all " + shape_to_string(s));
      if (n > 0) expect_close({total / n}, ops::mean(x), tolerance(t, n), "mean all");

      expect_axis_sums(v, s, t, x, trial % rank);
    }
  }
}

// Long enough for the CPU's pairwise sum to split rows (an odd length leaves
// a tail), and wide enough for its column accumulators to come in several runs.
TEST_P(OpsTest, SumAndMeanOfLongRowsAndWideColumns) {
  for (DType t : kFloatTypes) {
    const Shape s = {5, 1237};
    const auto v = rounded(random_values(rng, shape_numel(s)), t);
    Tensor x = make(v, s, t);
    double total = 0;
    for (double e : v) total += e;
    expect_close({total}, ops::sum(x), tolerance(t, 64), "sum all " + shape_to_string(s));
    for (int axis : {0, 1}) expect_axis_sums(v, s, t, x, axis);
  }
}

TEST_P(OpsTest, MeanOfNothingIsNaN) {
  Tensor x = Tensor::zeros(*engine, {0, 3}, DType::float64, device);
  EXPECT_TRUE(std::isnan(ops::mean(x).item<double>()));
  EXPECT_EQ(ops::sum(x).item<double>(), 0.0);
}

TEST_P(OpsTest, GemmWithTransposes) {
  for (DType t : kFloatTypes) {
    for (int trial = 0; trial < kTrials; ++trial) {
      const Shape dims = random_shape(rng, 3, 9);
      const std::int64_t m = dims[0], n = dims[1], k = dims[2];
      const bool ta = trial & 1, tb = trial & 2;
      const double alpha = trial % 3 == 0 ? 1.0 : 0.75, beta = trial % 4 == 0 ? 0.0 : -0.5;
      const auto va = rounded(random_values(rng, m * k), t);
      const auto vb = rounded(random_values(rng, k * n), t);
      const auto vc = rounded(random_values(rng, m * n), t);
      Tensor a = make(va, ta ? Shape{k, m} : Shape{m, k}, t);
      Tensor b = make(vb, tb ? Shape{n, k} : Shape{k, n}, t);
      Tensor c = make(vc, {m, n}, t);
      std::vector<double> ref(static_cast<std::size_t>(m * n));
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (std::int64_t p = 0; p < k; ++p) {
            acc += va[ta ? p * m + i : i * k + p] * vb[tb ? j * k + p : p * n + j];
          }
          ref[i * n + j] = alpha * acc + beta * vc[i * n + j];
        }
      }
      const ops::Cost cost = ops::gemm(a, b, c, ta, tb, alpha, beta);
      EXPECT_EQ(cost.flops, 2.0 * m * n * k);
      expect_close(ref, c, tolerance(t, k + 1),
                   "gemm m=" + std::to_string(m) + " n=" + std::to_string(n) + " k=" + std::to_string(k));
    }
  }
}

TEST_P(OpsTest, MixedPrecisionGemmAccumulatesInFloat32) {
  for (DType half : {DType::float16, DType::bfloat16}) {
    const std::int64_t m = 5, n = 3, k = 33;
    // Small integers are exact in both half formats, so the reference is exact.
    std::vector<double> va(m * k), vb(k * n);
    for (std::size_t i = 0; i < va.size(); ++i) va[i] = static_cast<double>(i % 7) - 3;
    for (std::size_t i = 0; i < vb.size(); ++i) vb[i] = static_cast<double>(i % 5) - 2;
    Tensor a = ops::cast(make(va, {m, k}, DType::float32), half);
    Tensor b = ops::cast(make(vb, {k, n}, DType::float32), half);
    Tensor c = ops::matmul(a, b);
    EXPECT_EQ(c.dtype(), DType::float32);
    std::vector<double> ref(m * n, 0.0);
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j)
        for (std::int64_t p = 0; p < k; ++p) ref[i * n + j] += va[i * k + p] * vb[p * n + j];
    expect_close(ref, c, 0, std::string("gemm ") + std::string(dtype_name(half)));
  }
}

TEST_P(OpsTest, SoftmaxCrossEntropy) {
  for (DType t : kFloatTypes) {
    for (int trial = 0; trial < kTrials; ++trial) {
      const std::int64_t rows = random_shape(rng, 1)[0];
      const std::int64_t classes = std::uniform_int_distribution<int>(1, 6)(rng);
      const auto vz = rounded(random_values(rng, rows * classes), t);
      std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
      for (auto& l : labels) l = std::uniform_int_distribution<std::int32_t>(0, classes - 1)(rng);
      Tensor z = make(vz, {rows, classes}, t);
      Tensor y = Tensor::from_host(*engine, std::span<const std::int32_t>(labels), {rows}, device);
      double loss = 0;
      std::vector<double> grad(vz.size());
      for (std::int64_t r = 0; r < rows; ++r) {
        double denom = 0;
        for (std::int64_t c = 0; c < classes; ++c) denom += std::exp(vz[r * classes + c]);
        loss -= std::log(std::exp(vz[r * classes + labels[r]]) / denom);
        for (std::int64_t c = 0; c < classes; ++c) {
          grad[r * classes + c] = (std::exp(vz[r * classes + c]) / denom - (c == labels[r])) / rows;
        }
      }
      if (rows) loss /= rows;
      Tensor l = Tensor::empty(*engine, {}, t, device), g = Tensor::empty(*engine, {rows, classes}, t, device);
      ops::softmax_cross_entropy(z, y, l, g);
      expect_close({loss}, l, tolerance(t, classes), "loss");
      expect_close(grad, g, tolerance(t, classes), "grad");
    }
  }
}

TEST_P(OpsTest, SoftmaxCrossEntropyIsStableForLargeLogits) {
  std::vector<double> z = {1000.0, 0.0, -1000.0};
  std::vector<std::int32_t> label = {0};
  Tensor logits = make(z, {1, 3}, DType::float32);
  Tensor y = Tensor::from_host(*engine, std::span<const std::int32_t>(label), {1}, device);
  Tensor loss = Tensor::empty(*engine, {}, DType::float32, device);
  ops::softmax_cross_entropy(logits, y, loss, Tensor());
  EXPECT_NEAR(loss.item<double>(), 0.0, 1e-6);
}

TEST_P(OpsTest, BadLabelFailsTheOpAndReachesTheBlocker) {
  std::vector<std::int32_t> label = {7};
  Tensor logits = Tensor::zeros(*engine, {1, 3}, DType::float32, device);
  Tensor y = Tensor::from_host(*engine, std::span<const std::int32_t>(label), {1}, device);
  Tensor loss = Tensor::empty(*engine, {}, DType::float32, device);
  ops::softmax_cross_entropy(logits, y, loss, Tensor());
  EXPECT_THROW(loss.item<float>(), std::out_of_range);
  // The engine stays usable.
  ops::fill(loss, 2.0);
  EXPECT_EQ(loss.item<float>(), 2.0f);
}

TEST_P(OpsTest, CostsCountFlopsAndBytes) {
  Tensor a = Tensor::zeros(*engine, {8, 4}, DType::float32, device);
  Tensor b = Tensor::zeros(*engine, {4}, DType::float32, device);
  const ops::Cost add = ops::add(a, b, a);
  EXPECT_EQ(add.flops, 32);
  EXPECT_EQ(add.bytes, 4.0 * (32 + 4 + 32));
  Tensor c = Tensor::zeros(*engine, {8, 8}, DType::float64, device);
  Tensor d = Tensor::zeros(*engine, {8, 8}, DType::float64, device);
  Tensor e = Tensor::zeros(*engine, {8, 8}, DType::float64, device);
  const ops::Cost g = ops::gemm(c, d, e, false, false, 1.0, 1.0);
  EXPECT_EQ(g.flops, 2.0 * 512);
  EXPECT_EQ(g.bytes, 8.0 * (64 + 64 + 2 * 64));
  engine->wait_all();
}

INSTANTIATE_TEST_SUITE_P(Devices, OpsTest, ::testing::ValuesIn(test_devices()), device_param_name);

// What an op declares to the engine as its data (PushOptions::bytes): each
// tensor once, whether read, written or both.
TEST(OpsAccess, DeclaresTheBytesOfEachTensorOnce) {
  Engine engine({.read_environment = false});
  Tensor x = Tensor::zeros(engine, {8, 4}, DType::float32);
  Tensor y = Tensor::zeros(engine, {4}, DType::float32);
  Tensor z = Tensor::zeros(engine, {8, 8}, DType::float64);
  ops::detail::Access access;
  access.read(x).read(x).read(y).write(y).write(z).write(z);
  EXPECT_EQ(access.bytes(), 4u * 32 + 4u * 4 + 8u * 64);
  EXPECT_EQ(access.reads().size(), 1u);
  EXPECT_EQ(access.writes().size(), 2u);
  engine.wait_all();
}

}  // namespace
}  // namespace depengine::testing
