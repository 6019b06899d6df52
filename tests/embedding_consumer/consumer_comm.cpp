// The communicator and the KVStore from a project that links depengine::comm
// (or depengine-comm.pc). Run without a launcher, the world is this process
// alone: an allreduce over two emulated devices, then a "local" KVStore.
// Exits with 0 when both computed the right values.
#include <depengine/comm.h>
#include <depengine/emulated_device.h>
#include <depengine/kvstore.h>

#include <cstdio>

int main() {
  using depengine::Device, depengine::Tensor;
  depengine::Engine engine;
  depengine::add_emulated_device(engine, 0);
  depengine::add_emulated_device(engine, 1);
  auto comm = depengine::Communicator::world(engine);
  Tensor g0 = Tensor::full(engine, {1000}, 1.0, depengine::DType::float32, Device::emulated(0));
  Tensor g1 = Tensor::full(engine, {1000}, 5.0, depengine::DType::float32, Device::emulated(1));
  comm.allreduce({g0, g1}, depengine::ReduceOp::mean);
  const float mean = g0.to_host<float>()[999];
  const int processes = comm.process_count();

  auto kv = depengine::KVStore::create(engine, "local");
  kv.init(7, Tensor::zeros(engine, {4}));
  kv.push(7, {Tensor::full(engine, {4}, mean, depengine::DType::float32, Device::emulated(0)),
              Tensor::full(engine, {4}, 4.0, depengine::DType::float32, Device::emulated(1))});
  Tensor w = Tensor::empty(engine, {4});
  kv.pull(7, {w});
  const float stored = w.to_host<float>()[3];

  std::printf("consumer_comm: %s; mean %g, stored %g\n", comm.describe().c_str(), mean, stored);
  return processes == 1 && mean == 3.0f && stored == 7.0f ? 0 : 1;
}
