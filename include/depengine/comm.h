#pragma once
/// \file comm.h
/// `Communicator`: collectives (allreduce, broadcast, allgather,
/// reduce_scatter) pushed as engine operations, inside one process across
/// its local devices and across processes through Open MPI.
///
/// A communicator is a group of *ranks*: each rank is one tensor slot of one
/// process. Every collective takes one tensor per local device and combines
/// every tensor of every process; processes may give different numbers of
/// tensors. Ranks are numbered process by process, tensor by tensor: local
/// tensor `j` of process `p` is rank `L_0 + ... + L_(p-1) + j`, for `L_q`
/// local tensors on process `q`, and there are `R = L_0 + ... + L_(P-1)`.
///
/// Collectives are asynchronous like any other operation: they return at
/// once, read and write their tensors' variables, and a later operation on a
/// tensor waits for the collective's result. Inside a process, allreduce runs
/// the ring of the local tensors (reduce-scatter, then allgather, chunk by
/// chunk, each step an operation on the receiving device; CPU tensors of at
/// most 64 KiB, or with one CPU worker, by one operation that gives the
/// ring's bits); across processes
/// each chunk is reduced with MPI's nonblocking collectives (from 16 KiB, a
/// ring of point-to-point messages), driven by one progress thread per
/// communicator that sleeps while no collective waits. Small allreduces that
/// are ready together go out fused (`CommOptions`). Tensors that sit each on
/// its own CUDA GPU of this process go through NCCL instead, when depengine
/// is built with it (`CommOptions::nccl`); across processes the process's
/// sum then travels through a host copy. Other CUDA tensors take part
/// through host copies in pinned memory: each is copied to the host before
/// the collective and back after it (MPI as Debian builds it is not
/// CUDA-aware), by operations on the GPU's copy streams. `world` adds the device
/// `Device::custom(63)` to the engine: it runs the operations that hand
/// exchanges to the progress thread.
///
/// **Issue order.** Every process must push the same collectives on a
/// communicator in the same order (one pushing thread, or an order the
/// threads agree on). The engine runs them whenever their inputs are ready,
/// which differs between processes; the progress thread therefore *starts*
/// them in push order only, however they became ready, so no process waits
/// for a collective another process has not started. Each collective (or
/// fused bucket) is preceded by a small metadata exchange (kind, dtype,
/// element count, the number of ranks its shapes give, root, whether its
/// inputs failed), so that mismatched shapes, dtypes or orders, or an input
/// that failed on one process, give an error on every process instead of a
/// hang or mixed-up data.
///
/// **Errors.** Bad arguments (no tensors, a null tensor, one of another
/// engine, tensors that differ in shape or dtype, a tensor listed twice)
/// throw
/// `std::invalid_argument` at push and push nothing. A failure while the
/// collective runs (a peer disagreed, an input failed somewhere, MPI
/// reported an error, or a peer did not take part within
/// `DEPENGINE_COMM_TIMEOUT` seconds) fails the collective's tensors: the
/// next blocking call on them rethrows it, as for any failed operation.
/// After a timeout the communicator stays broken: later collectives fail.
///
/// Launch: `mpirun -np 2 ./program` gives a world of two processes; run
/// without a launcher (or built without MPI, `-DDEPENGINE_WITH_MPI=OFF`) the
/// world is this process alone, and `describe()` says which. MPI is
/// initialised with `MPI_THREAD_MULTIPLE` unless the program did it first
/// (then it must have asked for `MPI_THREAD_MULTIPLE`, and it finalises MPI
/// itself); depengine finalises what it initialised at exit. See
/// docs/distributed.md.
///
/// Thread safety: a communicator may be used from several threads, but the
/// order of collectives must be the same on every process.
///
/// \code
///   #include <depengine/comm.h>
///   #include <depengine/emulated_device.h>
///   #include <depengine/ops.h>
///
///   depengine::Engine engine;
///   depengine::add_emulated_device(engine, 0);
///   depengine::add_emulated_device(engine, 1);
///   auto comm = depengine::Communicator::world(engine);   // every mpirun process
///   using depengine::Device, depengine::Tensor;
///   Tensor g0 = Tensor::full(engine, {1000}, 1.0, depengine::DType::float32, Device::emulated(0));
///   Tensor g1 = Tensor::full(engine, {1000}, 3.0, depengine::DType::float32, Device::emulated(1));
///   comm.allreduce({g0, g1}, depengine::ReduceOp::mean);  // returns at once
///   float v = g1.to_host<float>()[0];                     // 2.0 in a single process
/// \endcode

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "depengine/engine.h"
#include "depengine/options.h"
#include "depengine/tensor.h"

namespace depengine {

/// How allreduce and reduce_scatter combine the ranks' values.
enum class ReduceOp : std::uint8_t {
  sum,   ///< the sum over every rank
  mean,  ///< the sum divided by the number of ranks
};

/// How a communicator groups and cuts its exchanges between processes.
struct CommOptions {
  /// Allreduces (or chunks of one) of at most this many bytes that are
  /// ready at the same time on every process go to MPI fused into one buffer.
  std::size_t fuse_below_bytes = std::size_t{256} << 10;
  /// The most bytes one fused buffer holds (PyTorch DDP's default).
  std::size_t bucket_bytes = std::size_t{25} << 20;
  /// Allreduces and broadcasts larger than this go to MPI in pieces of this
  /// size, each started as soon as the previous one is, so that large
  /// tensors have no element limit and pieces travel together.
  std::size_t piece_bytes = std::size_t{16} << 20;
  /// Collectives whose tensors sit each on its own CUDA GPU of this process
  /// (two or more) go through NCCL, when depengine is built with it; false
  /// sends them through host copies and the host ring instead.
  bool nccl = true;
};

/// What a communicator has sent to the other processes so far.
struct CommStats {
  std::uint64_t exchanges = 0;  ///< exchanges started (chunks and pieces of the calls)
  std::uint64_t buckets = 0;    ///< MPI collectives they went out in (fused exchanges share one)
  /// Of those buckets, allreduces of at most 256 bytes that travelled inside
  /// the step in which the processes agree on each bucket: one MPI
  /// collective where others take two.
  std::uint64_t inline_buckets = 0;
};

class Communicator;

namespace detail {
struct CommState;
/// This process's devices alone, whatever the launcher: the ring of the
/// KVStore's "device" type.
Communicator local_communicator(Engine& engine);
/// `Communicator::world`, with every tensor not on the CPU taking part
/// through host copies, as CUDA tensors always do: their path, testable
/// without a GPU.
Communicator host_staged_world(Engine& engine, const CommOptions& options = {});
/// `Communicator::world`, with NCCL taking calls on a single GPU too: its
/// path on a machine with one GPU (the tests).
Communicator nccl_world(Engine& engine);
}

class Communicator {
 public:
  /// Every process of the job (`MPI_COMM_WORLD`, duplicated so that our
  /// traffic never mixes with the program's own), or this process alone
  /// when it was not started by an MPI launcher or MPI is not built in.
  /// Collective: every process calls it, in the same order as its other
  /// `world` calls. Throws `std::runtime_error` if MPI cannot be set up and
  /// `std::invalid_argument` for options of zero bytes.
  static Communicator world(Engine& engine, const CommOptions& options = {});

  /// A handle: copies share the communicator. The last handle to go waits
  /// for the collectives in flight.
  Communicator(const Communicator&) = default;
  Communicator& operator=(const Communicator&) = default;
  Communicator(Communicator&&) noexcept = default;
  Communicator& operator=(Communicator&&) noexcept = default;
  ~Communicator();

  int process_rank() const;
  int process_count() const;
  /// "MPI (Open MPI v4.1.4): process 0 of 2", or why there is no MPI;
  /// then "; NCCL between this process's GPUs" where NCCL takes part.
  std::string describe() const;
  /// Counts of what went to MPI (all zero in a group of one process).
  CommStats stats() const;

  /// In place: afterwards every tensor (of every process) holds the sum or
  /// the mean (the sum over `R`, the tensors of every process) over all of
  /// them. float32 or float64, one shape for all.
  void allreduce(std::vector<Tensor> tensors, ReduceOp op = ReduceOp::sum,
                 const PushOptions& options = {});
  /// Every tensor of every process gets the value of local tensor 0 of
  /// `root_process` (its first, when it gives several). Any dtype.
  void broadcast(std::vector<Tensor> tensors, int root_process = 0, const PushOptions& options = {});
  /// Each output (one per local device, `R` times the elements of an input,
  /// for `R` ranks) gets every rank's input, concatenated in rank order.
  /// Any dtype; inputs share a shape, outputs share a shape. Across
  /// processes the local tensor counts are gathered first: outputs sized for
  /// another `R` fail the call on every process.
  void allgather(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                 const PushOptions& options = {});
  /// Inputs hold `R` blocks of one output's size; output of rank `r` gets
  /// block `r` reduced over every rank (the mean: over `R`). float32 or
  /// float64. As for allgather, inputs sized for another `R` fail the call.
  void reduce_scatter(std::vector<Tensor> inputs, std::vector<Tensor> outputs,
                      ReduceOp op = ReduceOp::sum, const PushOptions& options = {});
  /// Blocks until every process reached the barrier, after this process
  /// started every collective pushed before it. Rethrows a communication
  /// failure (a timeout, an MPI error). Must not be called inside an operation.
  void barrier();

 private:
  explicit Communicator(std::shared_ptr<detail::CommState> state) : state_(std::move(state)) {}
  friend Communicator detail::local_communicator(Engine& engine);
  friend Communicator detail::host_staged_world(Engine& engine, const CommOptions& options);
  friend Communicator detail::nccl_world(Engine& engine);
  std::shared_ptr<detail::CommState> state_;
};

}  // namespace depengine
