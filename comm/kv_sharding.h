#pragma once
// Where a dist KVStore keeps a key: part j of key k lives on server shard
// (hash(k) + j) mod S, so that a key cut into parts is spread over every
// shard and small keys are spread by their hash.

#include <cstdint>

namespace depengine::detail {

/// A 64-bit mix of the key (splitmix64's finaliser), the same on every process.
inline std::uint64_t kv_key_hash(int key) {
  std::uint64_t x = static_cast<std::uint64_t>(static_cast<std::uint32_t>(key)) + 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// The shard (0 .. shards - 1) of part `part` of `key`.
inline int kv_shard_of(int key, std::int64_t part, int shards) {
  return static_cast<int>((kv_key_hash(key) + static_cast<std::uint64_t>(part)) % static_cast<std::uint64_t>(shards));
}

}  // namespace depengine::detail
