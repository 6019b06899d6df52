#pragma once
// ProcessGroup: the processes a communicator spans, and the one place that
// talks to them. Exchanges are numbered by `reserve` at push time; `start`
// hands one over once its inputs are ready (in any order), and the group
// begins them in number order on every process (the issue-order rule of
// comm.h). A group of one process has nothing to exchange.

#include <cstdint>
#include <memory>
#include <string>

#include "comm/exchange.h"
#include "depengine/comm.h"

namespace depengine::detail {

class ProcessGroup {
 public:
  virtual ~ProcessGroup() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The transport and the process, for Communicator::describe.
  virtual std::string describe() const = 0;

  virtual CommStats stats() const = 0;

  /// Numbers the next `count` exchanges; returns the first number.
  virtual std::uint64_t reserve(std::uint64_t count) = 0;
  /// Exchange `number` is ready; `done` runs when it has ended on this process.
  virtual void start(std::uint64_t number, const Exchange& exchange, ExchangeDone done) = 0;
  /// Exchange `number` will never be ready here: its inputs failed. The
  /// group still takes part in the metadata step, so every process fails it.
  virtual void skip(std::uint64_t number, const Exchange& exchange) = 0;
};

/// The group `Communicator::world` spans: every MPI process when launched
/// by an MPI launcher (or when the program initialised MPI), else this
/// process alone.
std::shared_ptr<ProcessGroup> make_world_group(const CommOptions& options);

/// This process alone; `why` says why there is no MPI.
std::shared_ptr<ProcessGroup> make_single_process_group(std::string why);

}  // namespace depengine::detail
