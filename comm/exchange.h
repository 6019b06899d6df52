#pragma once
// Exchange: one collective between the processes of a group, on host memory,
// as the progress thread starts it. The communicator cuts every call into
// exchanges (one per chunk of an allreduce) and numbers them at push time.

#include <cstdint>
#include <exception>
#include <future>
#include <memory>

#include "depengine/completion.h"
#include "depengine/dtype.h"

namespace depengine::detail {

struct Exchange {
  enum class Kind : std::uint8_t { allreduce, broadcast, allgather, reduce_scatter, barrier };
  Kind kind = Kind::barrier;
  /// The communicator call this exchange belongs to, for messages.
  std::uint64_t call = 0;
  /// reduce_scatter's input; every other kind works in place on `data`.
  const void* input = nullptr;
  void* data = nullptr;
  /// allreduce, broadcast: elements of `data`; allgather: elements each
  /// process contributes; reduce_scatter: elements each process receives.
  std::int64_t count = 0;
  DType dtype = DType::float32;
  int root = 0;
  /// Equal on every process for the same collective in the same place.
  std::uint64_t signature = 0;
};

const char* exchange_kind_name(Exchange::Kind kind);

/// What the progress thread calls when an exchange ends: the engine
/// operation's Completion, or the promise a blocking call waits on.
class ExchangeDone {
 public:
  explicit ExchangeDone(Completion done) : completion_(std::move(done)) {}
  explicit ExchangeDone(std::shared_ptr<std::promise<void>> waiter) : waiter_(std::move(waiter)) {}

  void operator()(std::exception_ptr error) {
    if (completion_) {
      completion_(error);
    } else if (waiter_) {
      if (error) waiter_->set_exception(error);
      else waiter_->set_value();
      waiter_.reset();
    }
  }

 private:
  Completion completion_;
  std::shared_ptr<std::promise<void>> waiter_;
};

}  // namespace depengine::detail
