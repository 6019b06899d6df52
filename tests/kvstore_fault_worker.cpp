// Workers that die: run under mpirun with 3 processes (process 2 a
// dedicated server) and DEPENGINE_COMM_TIMEOUT set low. After a good
// round, worker 0's process ends at once (_Exit: no destructor, no finish
// message, no MPI_Finalize, as in a crash; a death by a signal would keep
// this mpirun from ending the job); with `all`, worker 1's does too, so
// that no worker ever finishes; with `one`, worker 1 drops its store
// (finishes) and ends the same way. Either way the server's create() must
// throw the error of the worker that went silent, instead of serving forever.
//   mpirun --mca orte_abort_on_non_zero_status 0 -np 3 kvstore_fault_worker all|one

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <optional>

#include <depengine/engine.h>
#include <depengine/kvstore.h>
#include <depengine/tensor.h>

int main(int argc, char** argv) {
  using namespace depengine;
  const bool all_die = argc > 1 && std::strcmp(argv[1], "all") == 0;
  if (argc < 2 || (!all_die && std::strcmp(argv[1], "one") != 0)) {
    std::fprintf(stderr, "usage: kvstore_fault_worker all|one\n");
    return 2;
  }
  Engine engine;
  std::optional<KVStore> kv;
  try {
    kv.emplace(KVStore::create(engine, "dist_sync", {.servers = 1, .shards = 0, .part_bytes = 4096, .updater = {}}));
  } catch (const std::exception& e) {
    // Only the server gets here: its workers are gone.
    std::printf("kvstore_fault_worker: the server stopped: %s\n", e.what());
    std::fflush(stdout);
    return 3;
  }
  if (!kv->is_worker()) {
    std::printf("kvstore_fault_worker: the server ended as if every worker had finished\n");
    return 1;
  }
  if (kv->num_workers() != 2) {
    std::fprintf(stderr, "kvstore_fault_worker: needs 3 processes, got %s\n", kv->describe().c_str());
    return 2;
  }
  Tensor w = Tensor::zeros(engine, {3000});
  kv->init(1, w);
  kv->pushpull(1, {Tensor::full(engine, {3000}, 1.0)}, {w});
  if (w.to_host<float>()[0] != 2.0f) {
    std::fprintf(stderr, "kvstore_fault_worker: the round went wrong\n");
    return 1;
  }
  if (kv->rank() == 0 || all_die) std::_Exit(9);
  // Worker 1 finishes: dropping its store tells the server so. It then ends
  // without MPI_Finalize, whose closing fence may wait for ever for the
  // processes that died (once in CI under ASan: the server had reported and
  // gone, and the test timed out); a non-zero status keeps mpirun from
  // ending the job before the server reports.
  kv.reset();
  std::fputs("kvstore_fault_worker: worker 1 finished\n", stderr);
  std::_Exit(4);
}
