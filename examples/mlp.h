#pragma once
// A small multi-layer perceptron trained with depengine's tensor ops: the
// end-to-end example (mlp_train.cpp) and the workload of depbench's
// training_step scenario, which runs `train_epoch` synchronously (blocking
// after every step) and asynchronously (blocking once per epoch).
//
//   depengine::Engine engine;
//   using namespace depengine::examples;
//   const auto [train, test] = split(load_digits_or_generate(), 0.2, 1);
//   Mlp mlp(engine, {.layers = {train.cols, 64, train.classes}});
//   const auto batches = make_batches(engine, train, 32, mlp.config().dtype, mlp.config().device);
//   for (int epoch = 0; epoch < 10; ++epoch) std::printf("%f\n", train_epoch(mlp, batches, false));
//   double acc = mlp.accuracy(test);

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <depengine/engine.h>
#include <depengine/tensor.h>

namespace depengine::examples {

/// A classification data set held on the host, row-major.
struct Dataset {
  std::vector<float> features;       // rows x cols
  std::vector<std::int32_t> labels;  // rows, in [0, classes)
  std::int64_t rows = 0, cols = 0, classes = 0;
  std::string source;                // where it came from, for printing
};

/// Where python3-sklearn installs the handwritten digits (8x8 images, 10 classes).
inline constexpr const char* kDigitsPath = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz";

/// Reads the digits CSV (gzip'd, 64 pixel columns of 0..16 then the label),
/// scaling pixels to [0, 1]. Throws std::runtime_error if it cannot.
Dataset load_digits(const std::string& path = kDigitsPath);
/// Gaussian blobs: `classes` random centres in `cols` dimensions, deterministic for `seed`.
Dataset make_blobs(std::int64_t rows, std::int64_t cols, std::int64_t classes, std::uint64_t seed);
/// The digits if python3-sklearn is installed, else 1800 blobs shaped like them.
Dataset load_digits_or_generate();
/// A seeded shuffle, then the last `test_fraction` of the rows as the test set.
std::pair<Dataset, Dataset> split(const Dataset& data, double test_fraction, std::uint64_t seed);

struct MlpConfig {
  std::vector<std::int64_t> layers;  // sizes: inputs, hidden..., classes
  double learning_rate = 0.1;
  double weight_decay = 0.0;
  std::uint64_t seed = 1;
  DType dtype = DType::float32;
  Device device = Device::cpu();
};

/// One training batch on the device.
struct Batch {
  Tensor x;  // [rows, inputs]
  Tensor y;  // int32 [rows]
};

/// Cuts `data` into batches of `batch_size` rows (the last may be smaller),
/// uploaded to `device` in `dtype`.
std::vector<Batch> make_batches(Engine& engine, const Dataset& data, std::int64_t batch_size, DType dtype,
                                Device device);

class Mlp {
 public:
  /// He-initialised weights (seeded), zero biases.
  Mlp(Engine& engine, MlpConfig config);

  /// Pushes forward, backward and an SGD update for one batch; returns the
  /// batch's loss without waiting for it.
  Tensor train_step(const Batch& batch);
  /// Pushes the forward pass; returns the logits [rows, classes].
  Tensor forward(const Tensor& x) const;
  /// Fraction of `data` classified right. Blocks.
  double accuracy(const Dataset& data) const;

  const MlpConfig& config() const { return config_; }

 private:
  Engine& engine_;
  MlpConfig config_;
  std::vector<Tensor> weights_, biases_;  // weights_[l]: [layers[l], layers[l+1]]
};

/// One pass over `batches`; returns the mean batch loss. With
/// `block_each_step` the host waits for every step's loss (the synchronous
/// style), otherwise only once at the end.
double train_epoch(Mlp& mlp, const std::vector<Batch>& batches, bool block_each_step);

}  // namespace depengine::examples
