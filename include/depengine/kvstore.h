#pragma once
/// \file kvstore.h
/// `KVStore`: the parameter server's key–value store. `push` sends a key's
/// local gradients to be aggregated, `pull` fetches the aggregated (and
/// updated) value; both are pushed as engine operations on the tensors'
/// variables and return at once (wait with the usual blocking calls).
///
/// Types (`KVStore::create`):
///  - `"local"`: one process; the values pushed for a key (one per local
///    device) are summed on the CPU, the updater runs on the CPU, pulls copy
///    the stored value to each output.
///  - `"device"`: one process; the values are summed on their devices by
///    the Communicator's ring, the updater runs on the device the key was
///    initialised on.
///  - `"dist_sync"`: every process of an `mpirun` job. Each key lives on a
///    server shard chosen by hashing; a value larger than
///    `KVStoreOptions::part_bytes` is cut into parts spread over the shards.
///    The local values are summed first (in-machine aggregation), each
///    worker sends its sum to the shards, a shard merges the pushes of every
///    worker, runs the updater once, and only then answers the pulls that
///    follow those pushes: synchronous data parallelism.
///  - `"dist_async"`: as dist_sync, but a shard applies each worker's push
///    as it arrives and answers a pull with the value it has.
/// Shards run in the worker processes (one per process, the default), or
/// on dedicated server processes (`KVStoreOptions::servers = N`: the last N
/// ranks). On a server process `create` serves until every worker's store
/// is gone and then returns a store with `is_worker() == false`, whose only
/// use is to be dropped (the program then typically returns from main); it
/// throws std::runtime_error instead when a worker that did not finish sent
/// nothing for `DEPENGINE_COMM_TIMEOUT` seconds (it died or hangs; workers
/// say they are alive every quarter of that time).
/// In a world of one process the dist types run as `"local"` (describe()
/// says so).
///
/// Without an updater, a push replaces the stored value by the merged one
/// (allreduce semantics). The updater (or `set_optimizer`'s SGD) runs where
/// the value is stored; for a key cut into parts it runs once per part, on
/// that part's slice, so it must be elementwise (SGD is).
///
/// Errors: bad arguments (an unknown key, a tensor whose shape or dtype
/// differs from the key's init, a null tensor or one of another engine, a
/// key initialised again with another shape) throw
/// `std::invalid_argument` at the call and push nothing. What only a server
/// can see (processes that initialised a key with different shapes) fails
/// the init on every worker: the next blocking call on the key's tensors
/// rethrows it. A server that does not answer within
/// `DEPENGINE_COMM_TIMEOUT` seconds fails the waiting operations; the store
/// is then broken and later operations fail too.
///
/// Issue order: every worker inits the same keys in the same order and
/// calls `set_optimizer`/`set_updater` before its first push.
///
/// String keys: a name stands for the int key `KVStore::key_of(name)` (a
/// hash of it, the same on every process), so it is sharded and updated
/// like that int (the updater gets the int). `init` of a name whose int
/// another name or an int key already holds throws, and so does an int
/// `init` of an int that a name holds; pushes and pulls by name need that
/// name's init.
///
/// \code
///   #include <depengine/kvstore.h>
///   #include <depengine/emulated_device.h>
///
///   depengine::Engine engine;
///   depengine::add_emulated_device(engine, 0);
///   depengine::add_emulated_device(engine, 1);
///   using depengine::Device, depengine::Tensor;
///   auto kv = depengine::KVStore::create(engine, "local");
///   kv.init(3, Tensor::zeros(engine, {4}));
///   Tensor g0 = Tensor::full(engine, {4}, 1.0, depengine::DType::float32, Device::emulated(0));
///   Tensor g1 = Tensor::full(engine, {4}, 2.0, depengine::DType::float32, Device::emulated(1));
///   kv.push(3, {g0, g1});                    // stored = 1 + 2
///   Tensor w = Tensor::empty(engine, {4});
///   kv.pull(3, {w});
///   float v = w.to_host<float>()[0];         // 3.0
/// \endcode

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "depengine/engine.h"
#include "depengine/tensor.h"

namespace depengine {

/// Runs where a key is stored when its pushes are merged: `merged` is the
/// sum of the pushes, `stored` the value to update (push operations on
/// them, e.g. `ops::sgd_update(stored, merged, lr)`). On the dist types'
/// shards both are host tensors of the shard's own engine.
using KVUpdater = std::function<void(int key, const Tensor& merged, Tensor& stored)>;

/// Stochastic gradient descent with momentum and weight decay, run on the
/// stored values: g = rescale_grad merged + weight_decay w;
/// v = momentum v + g; w -= learning_rate v (v starts at 0; with momentum
/// 0 this is `ops::sgd_update`).
struct SGDOptimizer {
  double learning_rate = 0.01;
  double momentum = 0.0;
  double weight_decay = 0.0;
  /// Scales the merged gradient, e.g. 1 / (workers x devices) for a mean.
  double rescale_grad = 1.0;
};

struct KVStoreOptions {
  /// dist types: the number of dedicated server processes (the last ranks);
  /// 0 puts one server shard in each worker process.
  int servers = 0;
  /// dist types with shards in the workers: how many processes host one
  /// (the first ranks; 0: every process). 1 is a single central server.
  int shards = 0;
  /// dist types: values larger than this go to the shards in parts of this
  /// many bytes (at most 1 GiB), part j of key k to shard (hash(k) + j) mod S.
  std::size_t part_bytes = std::size_t{1} << 20;
  /// The updater, on every process (dedicated servers get theirs here;
  /// `set_updater` sets it later on processes that store values).
  KVUpdater updater;
};

namespace detail {
class KVBackend;
}

class KVStore {
 public:
  /// `type`: "local", "device", "dist_sync" or "dist_async". The dist types
  /// are collective: every process calls create, in the same order as its
  /// other create and `Communicator::world` calls. Throws
  /// std::invalid_argument for an unknown type or bad options.
  static KVStore create(Engine& engine, std::string_view type, KVStoreOptions options = {});

  /// A handle: copies share the store, which must not outlive its engine.
  /// The last handle of a worker waits for the store's operations, and
  /// with shards of its own serves the other workers until they are done.
  KVStore(const KVStore&) = default;
  KVStore& operator=(const KVStore&) = default;
  KVStore(KVStore&&) noexcept = default;
  KVStore& operator=(KVStore&&) noexcept = default;
  ~KVStore();

  /// Stores `value` under `key` (float32 or float64, on the CPU, an
  /// emulated device or a GPU: CUDA values and outputs of every call go
  /// through copies in pinned host memory); with several processes the
  /// value of process 0 wins.
  void init(int key, const Tensor& value);
  void init(const std::vector<int>& keys, const std::vector<Tensor>& values);
  /// Pushes the key's local values (one per device, same shape and dtype
  /// as init's); they are summed before they leave the process.
  void push(int key, std::vector<Tensor> values, int priority = 0);
  void push(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& values, int priority = 0);
  /// Copies the key's value (after this process's earlier pushes took
  /// effect, in dist_sync after every worker's) into each output.
  void pull(int key, std::vector<Tensor> outs, int priority = 0);
  void pull(const std::vector<int>& keys, const std::vector<std::vector<Tensor>>& outs, int priority = 0);
  /// push, then pull.
  void pushpull(int key, std::vector<Tensor> values, std::vector<Tensor> outs, int priority = 0);

  /// The int key that the name `key` stands for.
  static int key_of(std::string_view key);
  /// The calls above with string keys.
  void init(std::string_view key, const Tensor& value);
  void init(const std::vector<std::string>& keys, const std::vector<Tensor>& values);
  void push(std::string_view key, std::vector<Tensor> values, int priority = 0);
  void push(const std::vector<std::string>& keys, const std::vector<std::vector<Tensor>>& values, int priority = 0);
  void pull(std::string_view key, std::vector<Tensor> outs, int priority = 0);
  void pull(const std::vector<std::string>& keys, const std::vector<std::vector<Tensor>>& outs, int priority = 0);
  void pushpull(std::string_view key, std::vector<Tensor> values, std::vector<Tensor> outs, int priority = 0);

  /// The updater of the values this process stores (throws
  /// std::logic_error on a worker whose shards are on dedicated servers:
  /// give those `KVStoreOptions::updater`).
  void set_updater(KVUpdater updater);
  /// SGD on every store of the values (sent to the servers).
  void set_optimizer(const SGDOptimizer& sgd);

  std::string type() const;
  /// This process's rank in the job (0 when alone).
  int rank() const;
  int num_workers() const;
  /// The server shards (0 for local and device).
  int num_servers() const;
  /// False on a dedicated server process.
  bool is_worker() const;
  /// Blocks until every worker reached the barrier. Rethrows a
  /// communication failure. It does not wait for pushed operations.
  void barrier();
  /// "dist_sync: worker 0 of 2, 2 server shards (one per process), MPI ...".
  std::string describe() const;

 private:
  explicit KVStore(std::shared_ptr<detail::KVBackend> backend) : backend_(std::move(backend)) {}
  std::shared_ptr<detail::KVBackend> backend_;
};

}  // namespace depengine
