// A server process that dies: run under mpirun with 2 processes (process 1
// a dedicated server) and DEPENGINE_COMM_TIMEOUT set low. After a good
// round, the server's updater kills its own process (SIGKILL) when key 7
// arrives; the worker's pull of key 7 must fail with the timeout error, and
// so must its next operation, instead of hanging.
//   mpirun --mca orte_abort_on_non_zero_status 0 -np 2 kvstore_fault_server

#include <csignal>
#include <cstdio>
#include <string>

#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/ops.h>
#include <depengine/tensor.h>

#include "tests/support/message_of.h"

int main() {
  using namespace depengine;
  Engine engine;
  KVStoreOptions options;
  options.servers = 1;
  options.updater = [](int key, const Tensor& merged, Tensor& stored) {
    if (key == 7) std::raise(SIGKILL);
    ops::axpy(1.0, merged, stored);
  };
  KVStore kv = KVStore::create(engine, "dist_sync", options);
  if (!kv.is_worker()) return 0;
  if (kv.num_workers() != 1) {
    std::fprintf(stderr, "kvstore_fault_server: needs 2 processes, got %s\n", kv.describe().c_str());
    return 2;
  }
  Tensor w = Tensor::zeros(engine, {1000});
  kv.init(1, w);
  kv.init(7, w);
  kv.pushpull(1, {Tensor::full(engine, {1000}, 2.0)}, {w});
  if (w.to_host<float>()[0] != 2.0f) {
    std::fprintf(stderr, "kvstore_fault_server: the first round went wrong\n");
    return 1;
  }
  Tensor u = Tensor::zeros(engine, {1000});
  kv.pushpull(7, {Tensor::full(engine, {1000}, 1.0)}, {u});
  const std::string pull_error = message_of([&] { u.to_host<float>(); });
  std::printf("kvstore_fault_server: the pull failed: %s\n", pull_error.c_str());
  Tensor v = Tensor::zeros(engine, {1000});
  kv.pull(1, {v});
  const std::string next_error = message_of([&] { v.to_host<float>(); });
  std::printf("kvstore_fault_server: the next pull failed: %s\n", next_error.c_str());
  if (pull_error.find("DEPENGINE_COMM_TIMEOUT") == std::string::npos || next_error.empty()) {
    std::printf("kvstore_fault_server: the worker did not get the errors it should have\n");
    return 1;
  }
  std::printf("kvstore_fault_server: the worker got the timeout error\n");
  std::fflush(stdout);
  return 0;
}
