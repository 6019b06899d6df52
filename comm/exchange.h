#pragma once
// Exchange: one collective between the processes of a group, on host memory,
// as the progress thread starts it. The communicator cuts every call into
// exchanges (the process's data in pieces, and the small ones that carry the
// processes' tensor counts) and numbers them at push time.

#include <atomic>
#include <cstdint>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <utility>

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
  /// With `process_counts`: the elements of one rank.
  std::int64_t count = 0;
  /// allgather (optional), reduce_scatter: how many ranks (local tensors)
  /// each process has, one entry per process, filled by an earlier exchange
  /// before this one is started. Process q then contributes or receives
  /// process_counts[q] x count elements.
  const std::int32_t* process_counts = nullptr;
  DType dtype = DType::float32;
  int root = 0;
  /// Equal on every process for the same collective in the same place.
  std::uint64_t signature = 0;

  std::size_t bytes() const { return static_cast<std::size_t>(count) * dtype_size(dtype); }
};

const char* exchange_kind_name(Exchange::Kind kind);

/// Ends one engine operation (its Completion) or one blocking call (the
/// promise it waits on) once all of its `pieces` exchanges have ended, with
/// the first error any of them had.
class ExchangeJoin {
 public:
  ExchangeJoin(Completion done, int pieces) : completion_(std::move(done)), remaining_(pieces) {}
  ExchangeJoin(std::promise<void> waiter, int pieces) : waiter_(std::move(waiter)), has_waiter_(true), remaining_(pieces) {}

  void piece_ended(std::exception_ptr error) {
    if (error) {
      std::lock_guard lock(mutex_);
      if (!error_) error_ = error;
    }
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    std::exception_ptr first;
    {
      std::lock_guard lock(mutex_);
      first = error_;
    }
    if (has_waiter_) {
      if (first) waiter_.set_exception(first);
      else waiter_.set_value();
    } else {
      completion_(first);
    }
  }

 private:
  Completion completion_;
  std::promise<void> waiter_;
  bool has_waiter_ = false;
  std::atomic<int> remaining_;
  std::mutex mutex_;
  std::exception_ptr error_;
};

/// What the progress thread calls when one exchange ends.
class ExchangeDone {
 public:
  explicit ExchangeDone(std::shared_ptr<ExchangeJoin> join) : join_(std::move(join)) {}
  void operator()(std::exception_ptr error) {
    if (join_) std::exchange(join_, nullptr)->piece_ended(std::move(error));
  }

 private:
  std::shared_ptr<ExchangeJoin> join_;
};

}  // namespace depengine::detail
