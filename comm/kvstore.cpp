// KVStore: creates the backend of a type, and checks every call against
// the keys' table before any operation is pushed, so that bad input is an
// exception at the call with nothing enqueued.

#include "depengine/kvstore.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "comm/kv_backend.h"

namespace depengine {

namespace {

using detail::KVBackend;
using detail::KVKeyInfo;

[[noreturn]] void fail(const char* op, const std::string& why) {
  throw std::invalid_argument(std::string("depengine::KVStore::") + op + ": " + why);
}

std::string key_text(int key) { return "key " + std::to_string(key); }

std::string shape_text(const Shape& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void require_tensor(const char* op, const KVBackend& b, const Tensor& t, const std::string& what) {
  if (!t.defined()) fail(op, "a null tensor as " + what);
  if (&t.engine() != &b.engine()) fail(op, t.describe() + " belongs to another engine than the store");
  const DeviceKind kind = t.device().kind;
  if (kind != DeviceKind::cpu && kind != DeviceKind::emulated) {
    fail(op, t.describe() + ": the store handles CPU and emulated-device tensors only");
  }
  if (t.dtype() != DType::float32 && t.dtype() != DType::float64) {
    fail(op, "stores float32 or float64 values, got " + t.describe());
  }
}

// The key's table entry, after checking that `tensors` match its init.
KVKeyInfo& require_matching(const char* op, KVBackend& b, int key, const std::vector<Tensor>& tensors,
                            const char* what) {
  auto it = b.keys.find(key);
  if (it == b.keys.end()) fail(op, key_text(key) + " was never initialised (call init first)");
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

void require_worker(const char* op, const KVBackend& b) {
  if (!b.is_worker()) {
    throw std::logic_error(std::string("depengine::KVStore::") + op +
                           ": this process is a dedicated server; its store only serves the workers");
  }
}

template <class List>
void require_same_length(const char* op, const std::vector<int>& keys, const List& lists) {
  if (keys.size() != lists.size()) {
    fail(op, std::to_string(keys.size()) + " keys but " + std::to_string(lists.size()) + " lists of tensors");
  }
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
  KVBackend& b = *backend_;
  require_worker("init", b);
  require_same_length("init", keys, values);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    require_tensor("init", b, values[i], "the value of " + key_text(keys[i]));
    auto it = b.keys.find(keys[i]);
    if (it != b.keys.end() && (it->second.shape != values[i].shape() || it->second.dtype != values[i].dtype())) {
      fail("init", key_text(keys[i]) + " was initialised as " + std::string(dtype_name(it->second.dtype)) + " " +
                       shape_text(it->second.shape) + ", not as " + values[i].describe());
    }
    for (std::size_t j = 0; j < i; ++j) {
      if (keys[j] == keys[i]) fail("init", key_text(keys[i]) + " is given twice");
    }
  }
  for (std::size_t i = 0; i < keys.size(); ++i) {
    auto [it, added] = b.keys.try_emplace(keys[i]);
    if (added) it->second = {.shape = values[i].shape(), .dtype = values[i].dtype(), .numel = values[i].numel()};
    b.init(keys[i], values[i]);
  }
}

void KVStore::push(int key, std::vector<Tensor> values, int priority) {
  push(std::vector<int>{key}, std::vector<std::vector<Tensor>>{std::move(values)}, priority);
}

void KVStore::push(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& values, int priority) {
  KVBackend& b = *backend_;
  require_worker("push", b);
  require_same_length("push", keys, values);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) require_matching("push", b, keys[i], values[i], "values");
  for (std::size_t i = 0; i < keys.size(); ++i) {
    b.push(keys[i], values[i], priority);
    ++b.keys.at(keys[i]).pushes;
  }
}

void KVStore::pull(int key, std::vector<Tensor> outs, int priority) {
  pull(std::vector<int>{key}, std::vector<std::vector<Tensor>>{std::move(outs)}, priority);
}

void KVStore::pull(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& outs, int priority) {
  KVBackend& b = *backend_;
  require_worker("pull", b);
  require_same_length("pull", keys, outs);
  std::lock_guard lock(b.mutex);
  for (std::size_t i = 0; i < keys.size(); ++i) require_matching("pull", b, keys[i], outs[i], "outputs");
  for (std::size_t i = 0; i < keys.size(); ++i) b.pull(keys[i], outs[i], priority);
}

void KVStore::pushpull(int key, std::vector<Tensor> values, std::vector<Tensor> outs, int priority) {
  KVBackend& b = *backend_;
  require_worker("pushpull", b);
  std::lock_guard lock(b.mutex);
  require_matching("pushpull", b, key, values, "values");
  require_matching("pushpull", b, key, outs, "outputs");
  b.push(key, values, priority);
  ++b.keys.at(key).pushes;
  b.pull(key, outs, priority);
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
