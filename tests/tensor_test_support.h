#pragma once
// Shared by the tensor and ops tests: engines with an emulated device, random
// shapes (with 0- and 1-sized dimensions) and value comparison.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <depengine/emulated_device.h>
#include <depengine/engine.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

namespace depengine::testing {

/// An engine of `kind` with emulated devices 0 and 1 (two compute streams each).
inline std::unique_ptr<Engine> make_engine(EngineKind kind = EngineKind::Threaded) {
  auto engine = std::make_unique<Engine>(EngineOptions{.kind = kind, .cpu_threads = 2, .read_environment = false});
  add_emulated_device(*engine, 0, {.compute_streams = 2});
  add_emulated_device(*engine, 1, {.compute_streams = 2});
  return engine;
}

/// The devices every op is tested on.
inline std::vector<Device> test_devices() { return {Device::cpu(), Device::emulated(0)}; }

inline std::string device_param_name(const ::testing::TestParamInfo<Device>& info) {
  return info.param.is_cpu() ? "cpu" : "emulated" + std::to_string(info.param.index);
}

/// A shape of `rank` dimensions, each 0..max_dim, mostly non-zero.
inline Shape random_shape(std::mt19937& rng, int rank, int max_dim = 7) {
  Shape s;
  for (int i = 0; i < rank; ++i) {
    const int r = std::uniform_int_distribution<int>(0, 9)(rng);
    s.push_back(r == 0 ? 0 : r == 1 ? 1 : std::uniform_int_distribution<int>(1, max_dim)(rng));
  }
  return s;
}

inline std::vector<double> random_values(std::mt19937& rng, std::int64_t n) {
  std::vector<double> v(static_cast<std::size_t>(n));
  for (double& x : v) x = std::uniform_real_distribution<double>(-2.0, 2.0)(rng);
  return v;
}

/// `values` rounded to `dtype` (so that references start from what the tensor holds).
inline Tensor tensor_of(Engine& engine, const std::vector<double>& values, Shape shape, DType dtype,
                        Device device) {
  if (dtype == DType::float64) return Tensor::from_host(engine, std::span<const double>(values), shape, device);
  std::vector<float> f(values.begin(), values.end());
  return Tensor::from_host(engine, std::span<const float>(f), shape, device);
}

inline std::vector<double> rounded(const std::vector<double>& values, DType dtype) {
  std::vector<double> r = values;
  if (dtype == DType::float32) {
    for (double& v : r) v = static_cast<float>(v);
  }
  return r;
}

/// Tolerance for results of `terms`-long sums in `dtype`.
inline double tolerance(DType dtype, std::int64_t terms = 1) {
  const double eps = dtype == DType::float64 ? 1e-12 : 2e-6;
  return eps * static_cast<double>(std::max<std::int64_t>(terms, 1)) * 4;
}

inline void expect_close(const std::vector<double>& expected, const Tensor& actual, double tol,
                         const std::string& what) {
  const std::vector<double> got = actual.to_host<double>();
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], expected[i], tol * (1.0 + std::abs(expected[i]))) << what << " at " << i;
  }
}

}  // namespace depengine::testing
