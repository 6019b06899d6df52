#include "examples/mlp.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>

#include <depengine/ops.h>

namespace depengine::examples {

namespace ops = depengine::ops;

Dataset load_digits(const std::string& path) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) throw std::runtime_error("cannot open " + path);
  Dataset d{.cols = 64, .classes = 10, .source = path};
  char line[4096];
  while (gzgets(file, line, sizeof line)) {
    std::istringstream fields(line);
    std::string field;
    std::vector<float> row;
    while (std::getline(fields, field, ',')) row.push_back(std::stof(field));
    if (row.empty()) continue;
    if (row.size() != 65) {
      gzclose(file);
      throw std::runtime_error(path + ": a row has " + std::to_string(row.size()) + " fields, not 65");
    }
    for (int i = 0; i < 64; ++i) d.features.push_back(row[i] / 16.0f);
    d.labels.push_back(static_cast<std::int32_t>(row[64]));
    ++d.rows;
  }
  gzclose(file);
  if (d.rows == 0) throw std::runtime_error(path + " holds no rows");
  return d;
}

Dataset make_blobs(std::int64_t rows, std::int64_t cols, std::int64_t classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> centres(static_cast<std::size_t>(classes * cols));
  for (float& c : centres) c = normal(rng);
  Dataset d{.rows = rows, .cols = cols, .classes = classes, .source = "generated blobs"};
  for (std::int64_t r = 0; r < rows; ++r) {
    const auto label = static_cast<std::int32_t>(r % classes);
    d.labels.push_back(label);
    for (std::int64_t c = 0; c < cols; ++c) d.features.push_back(centres[label * cols + c] + 0.7f * normal(rng));
  }
  return d;
}

Dataset load_digits_or_generate() {
  try {
    return load_digits();
  } catch (const std::runtime_error&) {
    return make_blobs(1800, 64, 10, 7);
  }
}

std::pair<Dataset, Dataset> split(const Dataset& data, double test_fraction, std::uint64_t seed) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(data.rows));
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), std::mt19937_64(seed));
  const auto test_rows = static_cast<std::int64_t>(std::llround(test_fraction * data.rows));
  Dataset parts[2];
  for (Dataset& p : parts) {
    p.cols = data.cols;
    p.classes = data.classes;
    p.source = data.source;
  }
  for (std::int64_t i = 0; i < data.rows; ++i) {
    Dataset& p = parts[i >= data.rows - test_rows ? 1 : 0];
    const std::int64_t r = order[i];
    p.features.insert(p.features.end(), data.features.begin() + r * data.cols,
                      data.features.begin() + (r + 1) * data.cols);
    p.labels.push_back(data.labels[r]);
    ++p.rows;
  }
  return {parts[0], parts[1]};
}

std::vector<Batch> make_batches(Engine& engine, const Dataset& data, std::int64_t batch_size, DType dtype,
                                Device device) {
  std::vector<Batch> batches;
  for (std::int64_t start = 0; start < data.rows; start += batch_size) {
    const std::int64_t rows = std::min(batch_size, data.rows - start);
    const std::span<const float> x(data.features.data() + start * data.cols, rows * data.cols);
    const std::span<const std::int32_t> y(data.labels.data() + start, rows);
    Tensor xt = Tensor::from_host(engine, x, {rows, data.cols}, device);
    batches.push_back({dtype == DType::float32 ? xt : ops::cast(xt, dtype),
                       Tensor::from_host(engine, y, {rows}, device)});
  }
  return batches;
}

Mlp::Mlp(Engine& engine, MlpConfig config) : engine_(engine), config_(std::move(config)) {
  if (config_.layers.size() < 2) throw std::invalid_argument("Mlp: needs at least an input and an output size");
  for (std::size_t l = 0; l + 1 < config_.layers.size(); ++l) {
    const std::int64_t in = config_.layers[l], out = config_.layers[l + 1];
    weights_.push_back(Tensor::normal(engine_, {in, out}, config_.seed + l, 0.0, std::sqrt(2.0 / in),
                                      config_.dtype, config_.device));
    biases_.push_back(Tensor::zeros(engine_, {out}, config_.dtype, config_.device));
  }
}

Tensor Mlp::forward(const Tensor& x) const {
  Tensor h = x;
  for (std::size_t l = 0; l < weights_.size(); ++l) {
    Tensor z = ops::matmul(h, weights_[l]);
    ops::add(z, biases_[l], z);
    h = l + 1 < weights_.size() ? ops::relu(z) : z;
  }
  return h;
}

Tensor Mlp::train_step(const Batch& batch) {
  // Forward, keeping each layer's input for the backward pass.
  std::vector<Tensor> inputs{batch.x};
  for (std::size_t l = 0; l < weights_.size(); ++l) {
    Tensor z = ops::matmul(inputs.back(), weights_[l]);
    ops::add(z, biases_[l], z);
    if (l + 1 < weights_.size()) ops::relu(z, z);
    inputs.push_back(z);
  }
  const Tensor& logits = inputs.back();
  Tensor loss = Tensor::empty(engine_, {}, config_.dtype, config_.device);
  Tensor grad = Tensor::empty(engine_, logits.shape(), config_.dtype, config_.device);
  ops::softmax_cross_entropy(logits, batch.y, loss, grad);

  // Backward: grad is d loss / d (pre-activation output of layer l).
  for (std::size_t l = weights_.size(); l-- > 0;) {
    const Tensor& in = inputs[l];
    Tensor grad_w = ops::matmul(in, grad, /*trans_a=*/true);
    Tensor grad_b = ops::sum(grad, 0);
    if (l > 0) {
      Tensor grad_in = ops::matmul(grad, weights_[l], false, /*trans_b=*/true);
      // in = relu(pre-activation): in > 0 exactly where the pre-activation is.
      ops::relu_grad(in, grad_in, grad_in);
      grad = grad_in;
    }
    // Pushed after the matmul above that reads the old weights: the engine
    // orders this write behind that read.
    ops::sgd_update(weights_[l], grad_w, config_.learning_rate, config_.weight_decay);
    ops::sgd_update(biases_[l], grad_b, config_.learning_rate);
  }
  return loss;
}

double Mlp::accuracy(const Dataset& data) const {
  if (data.rows == 0) return 0.0;
  Tensor x = Tensor::from_host(engine_, data.features, {data.rows, data.cols}, config_.device);
  const std::vector<float> logits = forward(config_.dtype == DType::float32 ? x : ops::cast(x, config_.dtype))
                                        .to_host<float>();
  std::int64_t right = 0;
  for (std::int64_t r = 0; r < data.rows; ++r) {
    const float* row = logits.data() + r * data.classes;
    right += std::max_element(row, row + data.classes) - row == data.labels[r];
  }
  return static_cast<double>(right) / static_cast<double>(data.rows);
}

double train_epoch(Mlp& mlp, const std::vector<Batch>& batches, bool block_each_step) {
  if (batches.empty()) return 0.0;
  const MlpConfig& c = mlp.config();
  Engine& engine = batches.front().x.engine();
  // The running mean of the losses stays on the device: no blocking until the end.
  Tensor total = Tensor::zeros(engine, {}, c.dtype, c.device);
  for (const Batch& batch : batches) {
    Tensor loss = mlp.train_step(batch);
    if (block_each_step) loss.item<double>();
    ops::axpy(1.0 / static_cast<double>(batches.size()), loss, total);
  }
  return total.item<double>();
}

}  // namespace depengine::examples
