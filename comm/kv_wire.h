#pragma once
// The KVStore's messages between workers and server shards, on the store's
// own duplicate of MPI_COMM_WORLD. A worker sends a header (tag kHeaderTag)
// per part of a key, followed, when it carries a value, by the value's
// bytes (kPayloadTag); MPI keeps messages of one sender and tag in order,
// so a shard matches each payload to the header before it. A shard answers
// a pull with the value's bytes on a tag of the request (reply_tag), and
// an init, or a request that failed, with a status (kStatusTag).

#include <cstdint>

namespace depengine::detail::kv_wire {

enum class Kind : std::uint32_t {
  init,       // a part's shape; from worker 0 with its value
  push,       // a worker's sum for one round of the part, with the value;
              // with wants_value also its pull of the round's result
  pull,       // wants the value once `round` rounds are applied (dist_sync)
  optimizer,  // SGD's parameters in `sgd`
  finish,     // the worker's store is gone
  alive,      // the worker is alive (sent every DEPENGINE_COMM_TIMEOUT / 4)
};

struct Header {
  Kind kind = Kind::init;
  std::int32_t key = 0;
  std::uint32_t part = 0;
  std::uint32_t dtype = 0;
  std::int64_t count = 0;
  std::uint64_t request = 0;
  std::uint64_t round = 0;
  std::int32_t worker = 0;
  std::int32_t has_payload = 0;
  std::int32_t wants_value = 0;  // a push: reply with the value once the round is applied
  double sgd[4] = {0, 0, 0, 0};  // learning rate, momentum, weight decay, rescale
};

struct Status {
  std::uint64_t request = 0;
  std::int32_t failed = 0;
  char text[244] = {};
};

constexpr int kHeaderTag = 1;
constexpr int kPayloadTag = 2;
constexpr int kStatusTag = 3;
constexpr int kFirstReplyTag = 16;
constexpr std::uint64_t kReplyTags = std::uint64_t{1} << 20;

inline int reply_tag(std::uint64_t request) { return kFirstReplyTag + static_cast<int>(request % kReplyTags); }

}  // namespace depengine::detail::kv_wire
