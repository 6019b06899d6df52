// The README's data-parallel lines: two replicas of a weight, one per
// emulated device, updated with the mean of their gradients over every
// device of every process. Run alone, or under mpirun -np 2.

#include <cmath>
#include <cstdio>
#include <vector>

#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/ops.h>

int main() {
  depengine::Engine engine;
  depengine::add_emulated_device(engine, 0);
  depengine::add_emulated_device(engine, 1);
  auto comm = depengine::Communicator::world(engine);  // every mpirun process
  std::vector<depengine::Tensor> w, grad;               // a replica per device
  for (int d = 0; d < 2; ++d) {
    const auto dev = depengine::Device::emulated(d);
    w.push_back(depengine::Tensor::normal(engine, {64, 10}, /*seed=*/1, 0, 0.1, depengine::DType::float32, dev));
    grad.push_back(depengine::Tensor::full(engine, {64, 10}, comm.process_rank() + d, depengine::DType::float32, dev));
  }
  comm.allreduce(grad, depengine::ReduceOp::mean);  // returns at once
  for (int d = 0; d < 2; ++d) depengine::ops::sgd_update(w[d], grad[d], 0.1);  // waits for the mean
  std::printf("%s: w = %f\n", comm.describe().c_str(), w[1].to_host<float>()[0]);

  // What the lines above must give: the mean gradient is the mean of
  // rank + d over every process and device.
  const int p = comm.process_count();
  const float mean_grad = static_cast<float>(p - 1) / 2.0f + 0.5f;
  const float w0 = depengine::Tensor::normal(engine, {64, 10}, 1, 0, 0.1).to_host<float>()[0];
  const float expected = w0 - 0.1f * mean_grad;
  const float got = w[0].to_host<float>()[0];
  if (got != w[1].to_host<float>()[0] || std::abs(got - expected) > 1e-6f) {
    std::fprintf(stderr, "comm_quickstart: w = %f, expected %f\n", got, expected);
    return 1;
  }
  return 0;
}
