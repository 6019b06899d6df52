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
};

class KvShard {
 public:
  /// Adds the device the replies run on to `engine` (the shard's own).
  KvShard(Engine& engine, KvReplies& replies, int workers, bool sync, KVUpdate update);

  /// Where the payload announced by `header` is received.
  Tensor payload_buffer(const kv_wire::Header& header) const;
  /// A message from worker process `source`, with its payload if it has one.
  void on_message(int source, const kv_wire::Header& header, Tensor payload);
  void set_update(KVUpdate update);

  int finished_workers() const { return finished_; }
  /// Replies pushed that have not reached the node yet.
  int replies_pending() const { return replies_pending_.load(std::memory_order_acquire); }

 private:
  struct Round {
    Tensor merged;
    int arrived = 0;
  };
  struct Waiter {
    int source = 0;
    std::uint64_t request = 0;
    std::uint64_t round = 0;
  };
  struct Entry {
    bool known = false;
    std::uint32_t dtype = 0;
    std::int64_t count = 0;
    std::string error;  // set once, for good: every later request of the part fails with it
    Tensor stored, state;
    std::uint64_t version = 0;  // rounds applied
    std::map<std::uint64_t, Round> rounds;
    std::vector<Waiter> pulls, inits;
  };
  class ReplyTicket;

  void on_init(int source, int key, Entry& e, const kv_wire::Header& h, Tensor payload);
  void on_push(int key, Entry& e, const kv_wire::Header& h, Tensor payload);
  void apply(int key, Entry& e, const Tensor& merged);
  void answer_ready_pulls(Entry& e);
  void answer(int source, std::uint64_t request, Entry& e);
  void fail_entry(Entry& e, std::string error);

  Engine& engine_;
  KvReplies& replies_;
  const int workers_;
  const bool sync_;
  std::mutex update_mutex_;
  KVUpdate update_;
  std::map<std::pair<int, std::uint32_t>, Entry> entries_;
  int finished_ = 0;
  std::atomic<int> replies_pending_{0};
};

}  // namespace depengine::detail
