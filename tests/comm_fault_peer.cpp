// A peer that goes away: run under mpirun with 2 processes and
// DEPENGINE_COMM_TIMEOUT set low. After one good allreduce, process 1 is
// killed (`killed`) or stops taking part (`hung`); process 0's next
// collective must fail with the timeout error, and so must its next blocking
// call, instead of hanging. Process 0 then ends process 1 (whose pid it got
// through an allgather), so no process outlives the test.
//   mpirun --mca orte_abort_on_non_zero_status 0 -np 2 comm_fault_peer killed|hung

#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <thread>

#include <sys/types.h>
#include <unistd.h>

#include <depengine/comm.h>
#include <depengine/engine.h>
#include <depengine/tensor.h>

int main(int argc, char** argv) {
  using namespace depengine;
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode != "killed" && mode != "hung") {
    std::fprintf(stderr, "usage: comm_fault_peer killed|hung\n");
    return 2;
  }
  Engine engine;
  Communicator comm = Communicator::world(engine);
  if (comm.process_count() != 2) {
    std::fprintf(stderr, "comm_fault_peer: needs 2 processes, got %s\n", comm.describe().c_str());
    return 2;
  }
  const int rank = comm.process_rank();
  const std::int32_t my_pid = static_cast<std::int32_t>(getpid());
  Tensor pid = Tensor::from_host(engine, std::span<const std::int32_t>(&my_pid, 1), {1});
  Tensor pids = Tensor::zeros(engine, {2}, DType::int32);
  comm.allgather({pid}, {pids});
  const std::int32_t peer_pid = pids.to_host<std::int32_t>()[1];

  Tensor t = Tensor::full(engine, {1000}, 1.0);
  comm.allreduce({t});
  if (t.to_host<float>()[0] != 2.0f) {
    std::fprintf(stderr, "comm_fault_peer: the first allreduce went wrong\n");
    return 1;
  }
  if (rank == 1) {
    if (mode == "killed") std::raise(SIGKILL);
    // Hung: alive, but never pushes the next collective; process 0 ends it.
    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
  }

  Tensor u = Tensor::full(engine, {1000}, 1.0);
  comm.allreduce({u});
  bool collective_failed = false, barrier_failed = false;
  try {
    u.to_host<float>();
  } catch (const std::runtime_error& e) {
    std::printf("comm_fault_peer: the allreduce failed: %s\n", e.what());
    collective_failed = std::strstr(e.what(), "DEPENGINE_COMM_TIMEOUT") != nullptr;
  }
  try {
    comm.barrier();
  } catch (const std::runtime_error& e) {
    std::printf("comm_fault_peer: the barrier failed: %s\n", e.what());
    barrier_failed = true;
  }
  if (mode == "hung") kill(static_cast<pid_t>(peer_pid), SIGKILL);
  if (!collective_failed || !barrier_failed) {
    std::printf("comm_fault_peer: process 0 did not get the errors it should have\n");
    return 1;
  }
  std::printf("comm_fault_peer: process 0 got the timeout error\n");
  std::fflush(stdout);
  return 0;
}
