#pragma once
// HostStaging: the tensors a collective cannot work on in place take part
// through host stand-ins. The communicator's local steps run on the host,
// and Open MPI as Debian builds it is not CUDA-aware, so a CUDA tensor is
// copied to pinned host memory before the collective (when the collective
// reads it) and the stand-in's value is copied back after it (when the
// collective writes it). The copies are operations on the device's copy
// streams, ordered by the tensors' variables like any other.

#include <cstddef>
#include <utility>
#include <vector>

#include "depengine/tensor.h"

namespace depengine::detail {

class HostStaging {
 public:
  /// Replaces, in `tensors`, each one on CUDA (with `every_device`, each
  /// one not on the CPU: the tests' way through this path without a GPU)
  /// by a host stand-in. The first `read` of them start with the tensor's
  /// values (the collective reads them); `written`: the collective writes
  /// them, and copy_back copies them back.
  HostStaging(std::vector<Tensor>& tensors, std::size_t read, bool written, bool every_device);

  /// Pushes each written stand-in's values back into its tensor.
  void copy_back() const;

 private:
  std::vector<std::pair<Tensor, Tensor>> written_;  // the tensor, its stand-in
};

}  // namespace depengine::detail
