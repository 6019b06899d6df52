// A worker that dies while the other worker's pushpull waits in a round of
// its own process's shard: run under mpirun with 2 processes (a shard in
// each) and DEPENGINE_COMM_TIMEOUT set low. After a good round, worker 1's
// process ends at once (_Exit, as in a crash); worker 0's next pushpull,
// whose own push is held by its shard for worker 1's, must fail with the
// timeout error, and so must its next operation, instead of hanging.
//   mpirun --mca orte_abort_on_non_zero_status 0 -np 2 kvstore_fault_peer

#include <cstdio>
#include <cstdlib>
#include <string>

#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/tensor.h>

#include "tests/support/message_of.h"

int main() {
  using namespace depengine;
  Engine engine;
  // 3,000 float32 elements in parts of 4 KiB: parts on both shards.
  KVStore kv = KVStore::create(engine, "dist_sync", {.servers = 0, .shards = 0, .part_bytes = 4096, .updater = {}});
  if (kv.num_workers() != 2 || kv.num_servers() != 2) {
    std::fprintf(stderr, "kvstore_fault_peer: needs 2 processes, got %s\n", kv.describe().c_str());
    return 2;
  }
  Tensor w = Tensor::zeros(engine, {3000});
  kv.init(1, w);
  kv.pushpull(1, {Tensor::full(engine, {3000}, 1.0)}, {w});
  if (w.to_host<float>()[0] != 2.0f) {
    std::fprintf(stderr, "kvstore_fault_peer: the first round went wrong\n");
    return 1;
  }
  // Worker 0 still copies worker 1's reply out of its memory until its own
  // pushpull ends: worker 1 ends only after both have.
  kv.barrier();
  if (kv.rank() == 1) std::_Exit(9);
  kv.pushpull(1, {Tensor::full(engine, {3000}, 1.0)}, {w});
  const std::string pushpull_error = message_of([&] { w.to_host<float>(); });
  std::printf("kvstore_fault_peer: the pushpull failed: %s\n", pushpull_error.c_str());
  Tensor v = Tensor::zeros(engine, {3000});
  kv.pull(1, {v});
  const std::string next_error = message_of([&] { v.to_host<float>(); });
  std::printf("kvstore_fault_peer: the next pull failed: %s\n", next_error.c_str());
  if (pushpull_error.find("DEPENGINE_COMM_TIMEOUT") == std::string::npos || next_error.empty()) {
    std::printf("kvstore_fault_peer: the worker did not get the errors it should have\n");
    return 1;
  }
  std::printf("kvstore_fault_peer: the worker got the timeout error\n");
  std::fflush(stdout);
  // Without MPI_Finalize, whose closing fence may wait for the dead process.
  std::_Exit(0);
}
