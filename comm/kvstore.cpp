// KVStore: creates the backend of a type, and checks every call against
// the keys' table before any operation is pushed, so that bad input is an
// exception at the call with nothing enqueued.

#include "depengine/kvstore.h"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "comm/host_staging.h"
#include "comm/kv_backend.h"

namespace depengine {

namespace {

using detail::HostStaging;
using detail::KVBackend;
using detail::KVKeyInfo;

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string("depengine::KVStore::") + op + ": " + why);
}

// A key as the program gave it: an int, or a name standing for key_of(name).
struct KeyArg {
  int key;
  const std::string* name;
};

std::string key_text(const KeyArg& k) { return k.name ? "key '" + *k.name + "'" : "key " + std::to_string(k.key); }

std::vector<KeyArg> int_keys(const std::vector<int>& keys) {
  std::vector<KeyArg> args;
  for (int k : keys) args.push_back({k, nullptr});
  return args;
}

std::vector<KeyArg> named_keys(const std::vector<std::string>& names) {
  std::vector<KeyArg> args;
  for (const std::string& n : names) args.push_back({KVStore::key_of(n), &n});
  return args;
}

std::string shape_text(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void require_tensor(const char* op, const KVBackend& b, const Tensor& t, const std::string& what) {
  if (!t.defined()) fail(op, "a null tensor as " + what);
  if (&t.engine() != &b.engine()) fail(op, t.describe() + " belongs to another engine than the store");
  const DeviceKind kind = t.device().kind;
  if (kind != DeviceKind::cpu && kind != DeviceKind::emulated && kind != DeviceKind::cuda) {
    fail(op, t.describe() + ": the store handles CPU, emulated-device and CUDA tensors");
  }
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64) {
    fail(op, "stores float32 or float64 values, got " + t.describe());
  }
}

// The key's table entry, after checking that `tensors` match its init. A
// name must be the one its int was initialised with.
KVKeyInfo& require_matching(const char* op, KVBackend& b, const KeyArg& key, const std::vector<Tensor>& tensors,
                            const char* what) {
  auto it = b.keys.find(key.key);
  if (it == b.keys.end() || (key.name && it->second.name != *key.name)) {
    fail(op, key_text(key) + " was never initialised (call init first)");
  }
  if (tensors.empty()) fail(op, std::string("no ") + what + " for " + key_text(key));
  std::vector<Var> seen;
  for (const Tensor& t : tensors) {
    require_tensor(op, b, t, std::string("one of the ") + what);
    if (t.dtype() != it->second.dtype || t.shape() != it->second.shape) {
      fail(op, t.describe() + " does not match " + key_text(key) + ", initialised as " +
                   std::string(dtype_name(it->second.dtype)) + " " + shape_text(it->second.shape));
    }
    if (std::find(seen.begin(), seen.end(), t.var()) != seen.end()) {
      fail(op, t.describe() + " is given twice for " + key_text(key));
    }
    seen.push_back(t.var());
  }
  return it->second;
}

// Why `key` may not claim its int, which `holder` (a name, or "" for the
// int itself) already holds, or "".
std::string claim_conflict(const KeyArg& key, const std::string& holder) {
  const std::string mine = key.name ? *key.name : std::string();
  if (holder == mine) return "";
  const std::string held = holder.empty() ? "the int key " + std::to_string(key.key) : "key '" + holder + "'";
  return key_text(key) + (key.name ? " stands for int key " + std::to_string(key.key) + " (KVStore::key_of)" : "") +
         ", which " + held + " already holds";
}

void require_worker(const char* op, const KVBackend& b) {
  if (!b.is_worker()) {
    throw std::logic_error(std::string("depengine::KVStore::") + op +
                           ": this process is a dedicated server; its store only serves the workers");
  }
}

template <class Keys, class List>
void require_same_length(const char* op, const Keys& keys, const List& lists) {
  if (keys.size() != lists.size()) {
    fail(op, std::to_string(keys.size()) + " keys but " + std::to_string(lists.size()) + " lists of tensors");
  }
}

// A CUDA value as the store reads it: a copy in pinned host memory (see
// comm/host_staging.h); others as they are.
Tensor read_on_host(const Tensor& t) {
  std::vector<Tensor> staged = {t};
  const HostStaging staging(staged, 1, /*written=*/false, /*every_device=*/false);
  return staged[0];
}

void init_keys(KVBackend& b, const std::vector<KeyArg>& keys, const std::vector<Tensor>& values) {
  require_worker("init", b);
  require_same_length("init", keys, values);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    require_tensor("init", b, values[i], "the value of " + key_text(keys[i]));
    auto it = b.keys.find(keys[i].key);
    if (it != b.keys.end()) {
      if (const std::string why = claim_conflict(keys[i], it->second.name); !why.empty()) fail("init", why);
      if (it->second.shape != values[i].shape() || it->second.dtype != values[i].dtype()) {
        fail("init", key_text(keys[i]) + " was initialised as " + std::string(dtype_name(it->second.dtype)) + " " +
                         shape_text(it->second.shape) + ", not as " + values[i].describe());
      }
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (keys[j].key != keys[i].key) continue;
      const std::string why = claim_conflict(keys[i], keys[j].name ? *keys[j].name : std::string());
      fail("init", why.empty() ? key_text(keys[i]) + " is given twice" : why);
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [it, added] = b.keys.try_emplace(keys[i].key);
    if (added) {
      it->second = {.name = keys[i].name ? *keys[i].name : std::string(),
                    .shape = values[i].shape(),
                    .dtype = values[i].dtype(),
                    .numel = values[i].numel()};
    }
    b.init(keys[i].key, read_on_host(values[i]));
  }
}

void push_keys(KVBackend& b, const std::vector<KeyArg>& keys, const std::vector<std::vector<Tensor>>& values,
               int priority) {
  require_worker("push", b);
  require_same_length("push", keys, values);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) require_matching("push", b, keys[i], values[i], "values");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<Tensor> staged = values[i];
    const HostStaging staging(staged, staged.size(), /*written=*/false, /*every_device=*/false);
    b.push(keys[i].key, staged, priority);
    ++b.keys.at(keys[i].key).pushes;
  }
}

void pull_keys(KVBackend& b, const std::vector<KeyArg>& keys, const std::vector<std::vector<Tensor>>& outs,
               int priority) {
  require_worker("pull", b);
  require_same_length("pull", keys, outs);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) require_matching("pull", b, keys[i], outs[i], "outputs");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    std::vector<Tensor> staged = outs[i];
    const HostStaging staging(staged, 0, /*written=*/true, /*every_device=*/false);
    b.pull(keys[i].key, staged, priority);
    staging.copy_back();
  }
}

void pushpull_key(KVBackend& b, const KeyArg& key, const std::vector<Tensor>& values,
                  const std::vector<Tensor>& outs, int priority) {
  require_worker("pushpull", b);
  std::lock_guard lock(b.mutex);
  require_matching("pushpull", b, key, values, "values");
  require_matching("pushpull", b, key, outs, "outputs");
  std::vector<Tensor> staged_values = values, staged_outs = outs;
  const HostStaging reading(staged_values, staged_values.size(), /*written=*/false, /*every_device=*/false);
  const HostStaging writing(staged_outs, 0, /*written=*/true, /*every_device=*/false);
  b.pushpull(key.key, staged_values, staged_outs, priority);
  writing.copy_back();
}

}  // namespace

KVStore KVStore::create(Engine& engine, std::string_view type, KVStoreOptions options) {
  if (options.servers < 0) fail("create", "servers must not be negative");
  if (options.shards < 0) fail("create", "shards must not be negative");
  if (options.part_bytes == 0 || options.part_bytes > (std::size_t{1} << 30)) {
    fail("create", "part_bytes must be between 1 and 1 GiB");
  }
  detail::KVUpdate update{.updater = options.updater, .sgd = {}};
  if (type == "local" || type == "device") {
    if (options.servers != 0 || options.shards != 0) fail("create", "servers and shards apply to the dist types only");
    return KVStore(detail::make_local_backend(engine, std::string(type), type == "device", std::move(update)));
  }
  if (type == "dist_sync" || type == "dist_async") {
    return KVStore(detail::make_dist_backend(engine, std::string(type), type == "dist_sync", options));
  }
  fail("create", "unknown type '" + std::string(type) + "' (local, device, dist_sync or dist_async)");
}

KVStore::~KVStore() = default;

void KVStore::init(int key, const Tensor& value) { init(std::vector<int>{key}, std::vector<Tensor>{value}); }

void KVStore::init(const std::vector<int>& keys, const std::vector<Tensor>& values) {
  init_keys(*backend_, int_keys(keys), values);
}

void KVStore::push(int key, std::vector<Tensor> values, int priority) {
  push(std::vector<int>{key}, std::vector<std::vector<Tensor>>{std::move(values)}, priority);
}

void KVStore::push(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& values, int priority) {
  push_keys(*backend_, int_keys(keys), values, priority);
}

void KVStore::pull(int key, std::vector<Tensor> outs, int priority) {
  pull(std::vector<int>{key}, std::vector<std::vector<Tensor>>{std::move(outs)}, priority);
}

void KVStore::pull(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& outs, int priority) {
  pull_keys(*backend_, int_keys(keys), outs, priority);
}

void KVStore::pushpull(int key, std::vector<Tensor> values, std::vector<Tensor> outs, int priority) {
  pushpull_key(*backend_, {key, nullptr}, values, outs, priority);
}

// FNV-1a over the bytes, folded to a non-negative int: the same on every
// process and build.
int KVStore::key_of(std::string_view key) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : key) h = (h ^ c) * 0x100000001b3ull;
  return static_cast<int>((h ^ (h >> 32)) & 0x7fffffffu);
}

void KVStore::init(std::string_view key, const Tensor& value) {
  init(std::vector<std::string>{std::string(key)}, std::vector<Tensor>{value});
}

void KVStore::init(const std::vector<std::string>& keys, const std::vector<Tensor>& values) {
  init_keys(*backend_, named_keys(keys), values);
}

void KVStore::push(std::string_view key, std::vector<Tensor> values, int priority) {
  push(std::vector<std::string>{std::string(key)}, std::vector<std::vector<Tensor>>{std::move(values)}, priority);
}

void KVStore::push(const std::vector<std::string>& keys, const std::vector<std::vector<Tensor>>& values,
                   int priority) {
  push_keys(*backend_, named_keys(keys), values, priority);
}

void KVStore::pull(std::string_view key, std::vector<Tensor> outs, int priority) {
  pull(std::vector<std::string>{std::string(key)}, std::vector<std::vector<Tensor>>{std::move(outs)}, priority);
}

void KVStore::pull(const std::vector<std::string>& keys, const std::vector<std::vector<Tensor>>& outs,
                   int priority) {
  pull_keys(*backend_, named_keys(keys), outs, priority);
}

void KVStore::pushpull(std::string_view key, std::vector<Tensor> values, std::vector<Tensor> outs, int priority) {
  const std::string name(key);
  pushpull_key(*backend_, {key_of(name), &name}, values, outs, priority);
}

void KVStore::set_updater(KVUpdater updater) {
  std::lock_guard lock(backend_->mutex);
  backend_->set_update({.updater = std::move(updater), .sgd = {}});
}

void KVStore::set_optimizer(const SGDOptimizer& sgd) {
  if (!(sgd.learning_rate >= 0) || !(sgd.momentum >= 0) || !(sgd.weight_decay >= 0)) {
    fail("set_optimizer", "learning_rate, momentum and weight_decay must not be negative");
  }
  std::lock_guard lock(backend_->mutex);
  backend_->set_update({.updater = {}, .sgd = sgd});
}

std::string KVStore::type() const { return backend_->type(); }
int KVStore::rank() const { return backend_->rank(); }
int KVStore::num_workers() const { return backend_->num_workers(); }
int KVStore::num_servers() const { return backend_->num_servers(); }
bool KVStore::is_worker() const { return backend_->is_worker(); }
void KVStore::barrier() {
  require_worker("barrier", *backend_);
  backend_->barrier();
}
std::string KVStore::describe() const { return backend_->describe(); }

}  // namespace depengine
