#pragma once
// KvShard: one server shard of a dist KVStore — the parts of the keys
// that hash to it, the rounds of pushes being merged, and the pulls that
// wait for a round. It is driven by its node's progress thread (messages
// in) and pushes its work as engine operations: merging a push into its
// round, the update, and each reply, an asynchronous operation that reads
// the stored value and hands it to the node for sending, so that no update
// writes a value while it is being sent. A reply only queues the value for
// the node, so it runs inline on the thread that made it ready (the one
// that finished the update, or the node's when the value is ready at
// once) instead of waking a worker.

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "comm/kv_update.h"
#include "comm/kv_wire.h"
#include "depengine/completion.h"

namespace depengine::detail {

/// How a shard answers: implemented by its node; callable from any thread.
class KvReplies {
 public:
  virtual ~KvReplies() = default;
  /// Sends `value`'s bytes to `process` on the reply tag of `request`;
  /// `done` once sent (or failed).
  virtual void send_value(int process, std::uint64_t request, Tensor value, Completion done) = 0;
  /// Tells `process` that `request` ended: well when `error` is empty.
  virtual void send_status(int process, std::uint64_t request, std::string error) = 0;
  /// The shard no longer reads the memory of its own process's push
  /// `request` (on_local_push), nor writes its output.
  virtual void local_push_read(std::uint64_t request) = 0;
  /// The reply to this process's own `request` is already in its output
  /// (the merge wrote it there); `done` once that is recorded.
  virtual void local_value_written(std::uint64_t request, Completion done) = 0;
};

class KvShard {
 public:
  /// Merges of parts larger than this run on the shard's CPU worker when
  /// the machine has a core for it (KvNode decides).
  static constexpr std::size_t kInlineMergeBytes = std::size_t{256} << 10;

  /// Adds the device the replies run on to `engine` (the shard's own).
  /// Merges of parts up to `inline_merge_bytes` run inline on the thread
  /// that made them ready, larger ones on `engine`'s CPU worker.
  KvShard(Engine& engine, KvReplies& replies, int workers, bool sync, KVUpdate update,
          std::size_t inline_merge_bytes);

  /// Where the payload announced by `header` is received (a fresh buffer:
  /// the CPU buffer cache hands back one freed before, pages and all).
  Tensor payload_buffer(const kv_wire::Header& header) const;
  /// A message from worker process `source`, with its payload if it has one.
  void on_message(int source, const kv_wire::Header& header, Tensor payload);
  /// A push of the worker in this shard's own process, read in place from
  /// `data` (no copy through MPI): added into the round's merge buffer as
  /// the round's last addend, or copied to start it. With `out` (the
  /// output of the push's own pull, header.wants_value), dist_sync and no
  /// update, that last merge also writes the sum to `out`, so that the
  /// reply needs no copy. `KvReplies::local_push_read(header.request)`
  /// says when `data` is no longer read nor `out` written.
  void on_local_push(int source, const kv_wire::Header& header, const void* data, void* out);
  /// dist_sync: whether the round of the push `header` still waits for
  /// the push of the worker in this shard's own process (and the part has
  /// not failed), so that the round cannot be merged yet.
  bool lacks_own_push(const kv_wire::Header& header) const;
  void set_update(KVUpdate update);
  /// The node broke: the own process's pushes held for rounds that will
  /// not complete are let go (`local_push_read` for each).
  void release_held_pushes();

  int finished_workers() const { return finished_; }
  /// Replies pushed that have not reached the node yet.
  int replies_pending() const { return replies_pending_.load(std::memory_order_acquire); }

 private:
  // Tells the node once the shard stopped reading a local push's memory:
  // at the end of the engine operation that read it, or when the push (or
  // that operation) is dropped.
  class LocalRead {
   public:
    LocalRead() = default;
    LocalRead(KvReplies& replies, std::uint64_t request) : replies_(&replies), request_(request) {}
    LocalRead(LocalRead&& other) noexcept
        : replies_(std::exchange(other.replies_, nullptr)), request_(other.request_) {}
    LocalRead& operator=(LocalRead&& other) noexcept {
      release();
      replies_ = std::exchange(other.replies_, nullptr);
      request_ = other.request_;
      return *this;
    }
    ~LocalRead() { release(); }
    void release() {
      if (KvReplies* replies = std::exchange(replies_, nullptr)) replies->local_push_read(request_);
    }

   private:
    KvReplies* replies_ = nullptr;
    std::uint64_t request_ = 0;
  };
  /// A push's value: a payload received into a buffer of the shard's own,
  /// or the memory of the shard's own process, read in place.
  struct Addend {
    Tensor buffer;
    const void* local = nullptr;
    void* out = nullptr;  // a local push's own output (on_local_push)
    LocalRead read;
  };
  struct Round {
    Tensor merged;
    // The own process's push: it waits for the round's other pushes and is
    // added last into their merged buffer instead of being copied.
    std::optional<Addend> held;
    int arrived = 0;
    bool wrote_out = false;  // the last merge wrote the sum to the own push's output
  };
  struct Waiter {
    int source = 0;
    std::uint64_t request = 0;
    std::uint64_t round = 0;
    bool own_output = false;  // the own process's pushpull, whose merge may write its output
  };
  struct Entry {
    bool known = false;
    std::uint32_t dtype = 0;
    std::int64_t count = 0;
    std::string error;  // set once, for good: every later request of the part fails with it
    Tensor stored, state;
    std::uint64_t version = 0;  // rounds applied
    std::uint64_t wrote_out_version = 0;  // the version whose value the last merge wrote to its own output
    std::uint64_t own_rounds = 0;  // rounds the own process pushed (they come in order)
    std::map<std::uint64_t, Round> rounds;
    std::vector<Waiter> pulls, inits;
  };
  class ReplyTicket;

  void on_init(int source, int key, Entry& e, const kv_wire::Header& h, Tensor payload);
  void on_push(int source, int key, Entry& e, const kv_wire::Header& h, Addend value);
  void merge_push(int key, Entry& e, const kv_wire::Header& h, Addend value);
  /// The addend as a buffer of the shard's own (a local one copied into a
  /// buffer by an engine operation, and to `out` when given).
  Tensor own_buffer(const kv_wire::Header& h, Addend value, void* out);
  /// Pushes merged += value, then out = merged when `out` is given.
  void add_into(const Tensor& merged, const kv_wire::Header& h, Addend value, void* out);
  /// `forced_replace`: the round's sum was already pulled as the new value.
  void apply(int key, Entry& e, const Tensor& merged, bool forced_replace);
  void answer_ready_pulls(Entry& e);
  void answer(const Waiter& w, Entry& e);
  KVUpdate current_update();
  Device merge_device(std::size_t bytes) const;
  void fail_entry(Entry& e, std::string error);

  Engine& engine_;
  KvReplies& replies_;
  const int workers_;
  const bool sync_;
  std::mutex update_mutex_;
  KVUpdate update_;
  const std::size_t inline_merge_bytes_;
  std::map<std::pair<int, std::uint32_t>, Entry> entries_;
  int finished_ = 0;
  std::atomic<int> replies_pending_{0};
};

}  // namespace depengine::detail
