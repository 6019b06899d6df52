#pragma once
// LocalNccl: the collectives among the GPUs of this process, through NCCL
// when depengine is built with it. A call whose tensors sit each on its own
// CUDA GPU runs as one engine operation: once every tensor is ready it
// enqueues each GPU's part of the NCCL collective in one group call, and a
// waiter thread completes the operation when every GPU has finished it.
//
// NCCL requires collectives over communicators that share GPUs to reach
// every GPU in the same order. One NCCL stream per GPU, shared by every
// call, and one launch at a time give that order, whatever order the
// engine runs the operations in.

#include <memory>
#include <vector>

#include "depengine/comm.h"
#include "depengine/engine.h"
#include "depengine/tensor.h"

namespace depengine::detail {

enum class NcclCollective { allreduce, broadcast, allgather, reduce_scatter };

class LocalNccl {
 public:
  virtual ~LocalNccl() = default;

  /// Whether NCCL takes a call on `inputs` and `outputs` (the same list for
  /// an in-place call): every tensor on CUDA, each GPU once among the
  /// inputs, output i on input i's GPU, at least as many GPUs as the
  /// minimum this LocalNccl was made with.
  virtual bool takes(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const = 0;

  /// Pushes the call as one operation that reads the inputs and writes the
  /// outputs. Rank i of the collective is tensor i: broadcast sends input 0,
  /// allgather and reduce_scatter lay out their blocks in that order.
  virtual void push(Engine& engine, NcclCollective kind, ReduceOp op, const std::vector<Tensor>& inputs,
                    const std::vector<Tensor>& outputs, const PushOptions& options) = 0;
};

/// Null when depengine is built without NCCL. `min_gpus`: the fewest GPUs
/// a call must span to go through NCCL (2 for users: one GPU has nothing to
/// exchange; 1 lets the tests run NCCL on a machine with one GPU).
std::shared_ptr<LocalNccl> make_local_nccl(int min_gpus);

}  // namespace depengine::detail
