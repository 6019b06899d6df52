#pragma once
// KVBackend: what each KVStore type implements. kvstore.cpp checks every
// call against the keys' table (below) before it reaches a backend, so a
// backend sees only known keys and tensors that match their init.

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "comm/kv_update.h"
#include "depengine/kvstore.h"

namespace depengine::detail {

/// What this process knows of a key: its init's shape and dtype, and how
/// many times it pushed the key (dist_sync's pulls wait for that many rounds).
struct KVKeyInfo {
  std::string name;  // the string key that stands for this int, if one does
  Shape shape;
  DType dtype = DType::float32;
  std::int64_t numel = 0;
  std::uint64_t pushes = 0;
};

class KVBackend {
 public:
  explicit KVBackend(Engine& engine, std::string type) : engine_(engine), type_(std::move(type)) {}
  virtual ~KVBackend() = default;

  virtual void init(int key, const Tensor& value) = 0;
  virtual void push(int key, const std::vector<Tensor>& values, int priority) = 0;
  virtual void pull(int key, const std::vector<Tensor>& outs, int priority) = 0;
  /// A push, then a pull of its result; counts the push in `keys`.
  virtual void pushpull(int key, const std::vector<Tensor>& values, const std::vector<Tensor>& outs, int priority) {
    push(key, values, priority);
    ++keys.at(key).pushes;
    pull(key, outs, priority);
  }
  virtual void set_update(KVUpdate update) = 0;
  virtual int rank() const { return 0; }
  virtual int num_workers() const { return 1; }
  virtual int num_servers() const { return 1; }
  virtual bool is_worker() const { return true; }
  virtual void barrier() {}
  virtual std::string describe() const = 0;

  Engine& engine() const { return engine_; }
  const std::string& type() const { return type_; }

  /// The keys' table; `mutex` also serialises the calls into the backend,
  /// so that every thread's pushes reach it in one order.
  std::mutex mutex;
  std::map<int, KVKeyInfo> keys;

 private:
  Engine& engine_;
  std::string type_;
};

/// "local" and "device" (`on_devices`).
std::shared_ptr<KVBackend> make_local_backend(Engine& engine, std::string type, bool on_devices, KVUpdate update);
/// "dist_sync" and "dist_async" over the MPI world (local in a world of one).
std::shared_ptr<KVBackend> make_dist_backend(Engine& engine, std::string type, bool sync,
                                             const KVStoreOptions& options);

}  // namespace depengine::detail
