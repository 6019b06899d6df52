#include "examples/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <depengine/ops.h>

namespace depengine::examples {

DataParallelMlp::DataParallelMlp(Engine& engine, Communicator& comm, DataParallelConfig config)
    : engine_(engine), comm_(comm), config_(std::move(config)) {
  if (config_.layers.size() < 2) throw std::invalid_argument("DataParallelMlp: needs at least an input and an output size");
  if (config_.devices.empty()) throw std::invalid_argument("DataParallelMlp: needs at least one device");
  for (Device device : config_.devices) {
    std::vector<Tensor> w, b;
    for (std::size_t l = 0; l + 1 < config_.layers.size(); ++l) {
      const std::int64_t in = config_.layers[l], out = config_.layers[l + 1];
      w.push_back(Tensor::normal(engine_, {in, out}, config_.seed + l, 0.0, std::sqrt(2.0 / in), DType::float32, device));
      b.push_back(Tensor::zeros(engine_, {out}, DType::float32, device));
    }
    weights_.push_back(std::move(w));
    biases_.push_back(std::move(b));
  }
  if (KVStore* kv = config_.kvstore) {
    kv->set_optimizer(
        {.learning_rate = config_.learning_rate, .momentum = 0.0, .weight_decay = 0.0, .rescale_grad = 1.0 / ranks()});
    for (std::size_t l = 0; l < weights_[0].size(); ++l) {
      kv->init(static_cast<int>(2 * l), weights_[0][l]);
      kv->init(static_cast<int>(2 * l + 1), biases_[0][l]);
    }
  }
}

std::vector<Tensor> DataParallelMlp::train_step(const std::vector<Batch>& parts) {
  const int k = local_replicas();
  if (static_cast<int>(parts.size()) != k) throw std::invalid_argument("DataParallelMlp::train_step: one batch per replica");
  const std::size_t layers = weights_[0].size();
  // Forward on every replica, keeping each layer's input.
  std::vector<std::vector<Tensor>> inputs(static_cast<std::size_t>(k));
  std::vector<Tensor> losses, grads;
  for (int j = 0; j < k; ++j) {
    auto& in = inputs[static_cast<std::size_t>(j)];
    in.push_back(parts[static_cast<std::size_t>(j)].x);
    for (std::size_t l = 0; l < layers; ++l) {
      Tensor z = ops::matmul(in.back(), weights_[static_cast<std::size_t>(j)][l]);
      ops::add(z, biases_[static_cast<std::size_t>(j)][l], z);
      if (l + 1 < layers) ops::relu(z, z);
      in.push_back(z);
    }
    const Device device = config_.devices[static_cast<std::size_t>(j)];
    Tensor loss = Tensor::empty(engine_, {}, DType::float32, device);
    Tensor grad = Tensor::empty(engine_, in.back().shape(), DType::float32, device);
    ops::softmax_cross_entropy(in.back(), parts[static_cast<std::size_t>(j)].y, loss, grad);
    losses.push_back(loss);
    grads.push_back(grad);
  }
  // Backward, layer by layer on every replica; each layer's gradients are
  // averaged over all ranks as soon as they are pushed (or, without
  // overlap, once every layer's are).
  std::vector<std::vector<Tensor>> grad_w(layers), grad_b(layers);  // [layer][replica]
  auto average = [&](std::size_t l) {
    const int priority = static_cast<int>(layers - l);
    if (KVStore* kv = config_.kvstore) {
      // Reads the gradients, writes every replica's parameters once the
      // store's SGD updated them.
      std::vector<Tensor> w, b;
      for (int j = 0; j < k; ++j) {
        w.push_back(weights_[static_cast<std::size_t>(j)][l]);
        b.push_back(biases_[static_cast<std::size_t>(j)][l]);
      }
      kv->pushpull(static_cast<int>(2 * l), grad_w[l], w, priority);
      kv->pushpull(static_cast<int>(2 * l + 1), grad_b[l], b, priority);
      return;
    }
    comm_.allreduce(grad_w[l], ReduceOp::mean, {.priority = priority, .name = "allreduce:weights"});
    comm_.allreduce(grad_b[l], ReduceOp::mean, {.priority = priority, .name = "allreduce:bias"});
  };
  auto update = [&](std::size_t l) {
    if (config_.kvstore) return;  // the store updated them
    for (int j = 0; j < k; ++j) {
      const auto r = static_cast<std::size_t>(j);
      ops::sgd_update(weights_[r][l], grad_w[l][r], config_.learning_rate);
      ops::sgd_update(biases_[r][l], grad_b[l][r], config_.learning_rate);
    }
  };
  for (std::size_t l = layers; l-- > 0;) {
    for (int j = 0; j < k; ++j) {
      const auto r = static_cast<std::size_t>(j);
      grad_w[l].push_back(ops::matmul(inputs[r][l], grads[r], /*trans_a=*/true));
      grad_b[l].push_back(ops::sum(grads[r], 0));
      if (l > 0) {
        // Reads the weights before their update, which is pushed after it.
        Tensor grad_in = ops::matmul(grads[r], weights_[r][l], false, /*trans_b=*/true);
        ops::relu_grad(inputs[r][l], grad_in, grad_in);
        grads[r] = grad_in;
      }
    }
    if (config_.overlap) {
      average(l);
      update(l);
    }
  }
  if (!config_.overlap) {
    for (std::size_t l = layers; l-- > 0;) average(l);
    for (std::size_t l = layers; l-- > 0;) update(l);
  }
  return losses;
}

double DataParallelMlp::accuracy(const Dataset& data) const {
  if (data.rows == 0) return 0.0;
  const Device device = config_.devices[0];
  Tensor h = Tensor::from_host(engine_, data.features, {data.rows, data.cols}, device);
  for (std::size_t l = 0; l < weights_[0].size(); ++l) {
    Tensor z = ops::matmul(h, weights_[0][l]);
    ops::add(z, biases_[0][l], z);
    h = l + 1 < weights_[0].size() ? ops::relu(z) : z;
  }
  const std::vector<float> logits = h.to_host<float>();
  std::int64_t right = 0;
  for (std::int64_t r = 0; r < data.rows; ++r) {
    const float* row = logits.data() + r * data.classes;
    right += std::max_element(row, row + data.classes) - row == data.labels[static_cast<std::size_t>(r)];
  }
  return static_cast<double>(right) / static_cast<double>(data.rows);
}

std::vector<float> DataParallelMlp::parameters(int replica) const {
  std::vector<float> all;
  for (std::size_t l = 0; l < weights_[0].size(); ++l) {
    for (const Tensor* t : {&weights_[static_cast<std::size_t>(replica)][l], &biases_[static_cast<std::size_t>(replica)][l]}) {
      const std::vector<float> v = t->to_host<float>();
      all.insert(all.end(), v.begin(), v.end());
    }
  }
  return all;
}

Dataset whole_global_batches(const Dataset& data, std::int64_t global_batch) {
  Dataset d = data;
  d.rows = data.rows / global_batch * global_batch;
  d.features.resize(static_cast<std::size_t>(d.rows * d.cols));
  d.labels.resize(static_cast<std::size_t>(d.rows));
  return d;
}

std::vector<std::vector<Batch>> shard_batches(Engine& engine, const Dataset& data, std::int64_t batch_per_replica,
                                              const DataParallelMlp& mlp, int process_rank) {
  const int k = mlp.local_replicas();
  const std::int64_t global = batch_per_replica * mlp.ranks();
  const std::int64_t steps = data.rows / global;
  std::vector<std::vector<Batch>> shards(static_cast<std::size_t>(steps));
  for (std::int64_t s = 0; s < steps; ++s) {
    for (int j = 0; j < k; ++j) {
      const std::int64_t first = s * global + (static_cast<std::int64_t>(process_rank) * k + j) * batch_per_replica;
      Dataset part = data;
      part.rows = batch_per_replica;
      part.features.assign(data.features.begin() + first * data.cols,
                           data.features.begin() + (first + batch_per_replica) * data.cols);
      part.labels.assign(data.labels.begin() + first, data.labels.begin() + first + batch_per_replica);
      shards[static_cast<std::size_t>(s)].push_back(
          make_batches(engine, part, batch_per_replica, DType::float32, mlp.config().devices[static_cast<std::size_t>(j)])[0]);
    }
  }
  return shards;
}

}  // namespace depengine::examples
