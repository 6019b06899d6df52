// The dist KVStore types, the worker's side: each key is cut into parts
// (at most `part_bytes` each) spread over the server shards by hashing;
// init, push and pull are asynchronous operations that hand one job per
// call to the node. A key's operations on this worker write the key's own
// variable, so they reach the shards in push order.

#include <depengine/engine.h>

#include <condition_variable>
#include <mutex>
#include <stdexcept>

#include "comm/kv_backend.h"
#include "comm/inline_executor.h"
#include "comm/kv_host_ops.h"
#include "comm/kv_node.h"
#include "comm/kv_sharding.h"
#include "comm/mpi_runtime.h"

namespace depengine::detail {

namespace {

// Counts the operations pushed that may still hand a job to the node, so
// that the store goes only after the last of them.
class PendingOps {
 public:
  class Ticket {
   public:
    explicit Ticket(PendingOps& ops) : ops_(&ops) {
      std::lock_guard lock(ops_->mutex_);
      ++ops_->pending_;
    }
    Ticket(Ticket&& other) noexcept : ops_(std::exchange(other.ops_, nullptr)) {}
    Ticket& operator=(Ticket&&) = delete;
    ~Ticket() {
      if (ops_ == nullptr) return;
      std::lock_guard lock(ops_->mutex_);
      if (--ops_->pending_ == 0) ops_->idle_.notify_all();
    }

   private:
    PendingOps* ops_;
  };

  void wait_idle() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [this] { return pending_ == 0; });
  }

 private:
  std::mutex mutex_;
  std::condition_variable idle_;
  int pending_ = 0;
};

// The device of the operations that hand a request to the node: inline on
// the thread that found them ready (they only queue the job).
constexpr Device kRequestDevice = Device::custom(61);

void add_request_device(Engine& engine) {
  if (engine.has_device(kRequestDevice)) return;
  try {
    engine.add_device(kRequestDevice, std::make_unique<InlineExecutor>());
  } catch (const std::invalid_argument&) {
    if (!engine.has_device(kRequestDevice)) throw;  // another store added it first
  }
}

struct Part {
  int process = 0;
  std::int64_t offset = 0, count = 0;
};

class DistBackend final : public KVBackend {
 public:
  DistBackend(Engine& engine, std::string type, bool sync, KvLayout layout, const KVStoreOptions& options)
      : KVBackend(engine, std::move(type)), part_bytes_(options.part_bytes) {
    add_request_device(engine);
    node_ = std::make_unique<KvNode>(layout, sync, KVUpdate{.updater = options.updater, .sgd = {}});
  }

  ~DistBackend() override {
    ops_.wait_idle();
    node_->finish();
    for (auto& [key, state] : key_state_) engine().delete_var(state.var);
    node_.reset();
  }

  void serve() { node_->serve(); }

  void init(int key, const Tensor& value) override {
    const std::vector<Part> parts = parts_of(key, value.dtype(), value.numel());
    const std::uint64_t first = node_->new_requests(parts.size());
    const bool carries_value = node_->layout().rank == 0;
    engine().push_async(
        [this, parts, first, key, carries_value, data = static_cast<const char*>(value.data()), dtype = value.dtype(),
         ticket = PendingOps::Ticket(ops_)](RunContext&, Completion done) mutable {
          KvJob job;
          for (std::size_t j = 0; j < parts.size(); ++j) {
            kv_wire::Header h = header(kv_wire::Kind::init, key, j, dtype, parts[j].count, first + j);
            h.has_payload = carries_value ? 1 : 0;
            job.messages.push_back({.process = parts[j].process,
                                    .header = h,
                                    .payload = data + offset_of(parts[j], dtype),
                                    .bytes = bytes_of(parts[j], dtype)});
            job.acknowledged.push_back(first + j);
          }
          submit(std::move(job), std::move(done), std::move(ticket));
        },
        {value.var()}, {state_of(key).var}, {.name = "kvstore:init", .device = kRequestDevice});
  }

  void push(int key, const std::vector<Tensor>& values, int priority) override {
    KeyState& ks = state_of(key);
    const KVKeyInfo& info = keys.at(key);
    const Tensor source = local_sum(ks, info, values, priority);
    const std::vector<Part> parts = parts_of(key, info.dtype, info.numel);
    const std::uint64_t first = node_->new_requests(parts.size());
    engine().push_async(
        [this, parts, key, first, round = info.pushes, data = static_cast<const char*>(source.data()),
         dtype = info.dtype, ticket = PendingOps::Ticket(ops_)](RunContext&, Completion done) mutable {
          KvJob job;
          add_pushes(job, parts, key, first, round, dtype, data, false);
          submit(std::move(job), std::move(done), std::move(ticket));
        },
        {source.var()}, {ks.var}, {.priority = priority, .name = "kvstore:push", .device = kRequestDevice});
  }

  void pull(int key, const std::vector<Tensor>& outs, int priority) override {
    KeyState& ks = state_of(key);
    const KVKeyInfo& info = keys.at(key);
    const std::vector<Part> parts = parts_of(key, info.dtype, info.numel);
    const std::uint64_t first = node_->new_requests(parts.size());
    const Tensor& out = outs[0];
    engine().push_async(
        [this, parts, key, first, round = info.pushes, data = static_cast<char*>(out.data()), dtype = info.dtype,
         ticket = PendingOps::Ticket(ops_)](RunContext&, Completion done) mutable {
          KvJob job;
          for (std::size_t j = 0; j < parts.size(); ++j) {
            kv_wire::Header h = header(kv_wire::Kind::pull, key, j, dtype, parts[j].count, first + j);
            h.round = round;
            job.messages.push_back({.process = parts[j].process, .header = h});
          }
          add_receives(job, parts, first, dtype, data);
          submit(std::move(job), std::move(done), std::move(ticket));
        },
        {}, {out.var(), ks.var}, {.priority = priority, .name = "kvstore:pull", .device = kRequestDevice});
    copy_to_other_outputs(outs, priority);
  }

  // One job: each part's push asks for the round's value back, so no pull
  // message follows, each part's reply leaves as soon as its round is
  // applied, and the own shard's merge can write its part of the output.
  // When `outs` is the pushed tensor, a remote part's reply lands where its
  // push is sent from; the node posts that receive once the send completed.
  void pushpull(int key, const std::vector<Tensor>& values, const std::vector<Tensor>& outs, int priority) override {
    KeyState& ks = state_of(key);
    KVKeyInfo& info = keys.at(key);
    const Tensor source = local_sum(ks, info, values, priority);
    const std::vector<Part> parts = parts_of(key, info.dtype, info.numel);
    const std::uint64_t first = node_->new_requests(parts.size());
    const Tensor& out = outs[0];
    std::vector<Var> reads;
    if (source.var() != out.var()) reads.push_back(source.var());
    engine().push_async(
        [this, parts, key, first, round = info.pushes, from = static_cast<const char*>(source.data()),
         into = static_cast<char*>(out.data()), dtype = info.dtype,
         ticket = PendingOps::Ticket(ops_)](RunContext&, Completion done) mutable {
          KvJob job;
          add_pushes(job, parts, key, first, round, dtype, from, true);
          add_receives(job, parts, first, dtype, into);
          submit(std::move(job), std::move(done), std::move(ticket));
        },
        reads, {out.var(), ks.var}, {.priority = priority, .name = "kvstore:pushpull", .device = kRequestDevice});
    ++info.pushes;
    copy_to_other_outputs(outs, priority);
  }

  void set_update(KVUpdate update) override {
    const KvLayout& layout = node_->layout();
    if (update.sgd) {
      // To every shard, ahead of this worker's later pushes.
      KvJob job;
      for (int s = 0; s < layout.shards(); ++s) {
        kv_wire::Header h = header(kv_wire::Kind::optimizer, 0, 0, DType::float32, 0, 0);
        const SGDOptimizer& o = *update.sgd;
        h.sgd[0] = o.learning_rate;
        h.sgd[1] = o.momentum;
        h.sgd[2] = o.weight_decay;
        h.sgd[3] = o.rescale_grad;
        job.messages.push_back({.process = layout.shard_process(s), .header = h});
      }
      job.done = [](std::exception_ptr) {};
      node_->submit(std::move(job));
      return;
    }
    if (layout.servers > 0) {
      throw std::logic_error(
          "depengine::KVStore::set_updater: the values are stored on dedicated server processes; give the updater "
          "to every process in KVStoreOptions::updater");
    }
    node_->set_update(std::move(update));
  }

  int rank() const override { return node_->layout().rank; }
  int num_workers() const override { return node_->layout().workers(); }
  int num_servers() const override { return node_->layout().shards(); }
  bool is_worker() const override { return node_->layout().is_worker(); }
  void barrier() override { node_->barrier(); }
  std::string describe() const override { return type() + ": " + node_->describe(); }

 private:
  struct KeyState {
    Var var;
    Tensor sum;  // the local values' sum, when there are several
  };

  KeyState& state_of(int key) {
    auto [it, added] = key_state_.try_emplace(key);
    if (added) it->second.var = engine().new_var("kvstore:key");
    return it->second;
  }

  kv_wire::Header header(kv_wire::Kind kind, int key, std::size_t part, DType dtype, std::int64_t count,
                         std::uint64_t request) const {
    kv_wire::Header h;
    h.kind = kind;
    h.key = key;
    h.part = static_cast<std::uint32_t>(part);
    h.dtype = static_cast<std::uint32_t>(dtype);
    h.count = count;
    h.request = request;
    h.worker = node_->layout().rank;
    return h;
  }

  // The value a push sends: the local values' sum when there are several.
  Tensor local_sum(KeyState& ks, const KVKeyInfo& info, const std::vector<Tensor>& values, int priority) {
    if (values.size() == 1) return values[0];
    if (!ks.sum.defined()) ks.sum = Tensor::empty(engine(), info.shape, info.dtype);
    kv_host_ops::sum(values, ks.sum, priority, "kvstore:local_sum");
    return ks.sum;
  }

  static std::size_t bytes_of(const Part& part, DType dtype) {
    return static_cast<std::size_t>(part.count) * dtype_size(dtype);
  }
  static std::int64_t offset_of(const Part& part, DType dtype) {
    return part.offset * static_cast<std::int64_t>(dtype_size(dtype));
  }

  void add_pushes(KvJob& job, const std::vector<Part>& parts, int key, std::uint64_t first, std::uint64_t round,
                  DType dtype, const char* data, bool wants_value) const {
    for (std::size_t j = 0; j < parts.size(); ++j) {
      kv_wire::Header h = header(kv_wire::Kind::push, key, j, dtype, parts[j].count, first + j);
      h.round = round;
      h.has_payload = 1;
      h.wants_value = wants_value ? 1 : 0;
      job.messages.push_back({.process = parts[j].process,
                              .header = h,
                              .payload = data + offset_of(parts[j], dtype),
                              .bytes = bytes_of(parts[j], dtype)});
    }
  }

  static void add_receives(KvJob& job, const std::vector<Part>& parts, std::uint64_t first, DType dtype, char* data) {
    for (std::size_t j = 0; j < parts.size(); ++j) {
      job.receives.push_back({.process = parts[j].process,
                              .request = first + j,
                              .into = data + offset_of(parts[j], dtype),
                              .bytes = bytes_of(parts[j], dtype)});
    }
  }

  void copy_to_other_outputs(const std::vector<Tensor>& outs, int priority) {
    for (std::size_t i = 1; i < outs.size(); ++i) kv_host_ops::copy(outs[0], outs[i], priority, "kvstore:pull");
  }

  // Part j of the key goes to shard (hash(key) + j) mod S.
  std::vector<Part> parts_of(int key, DType dtype, std::int64_t numel) const {
    const std::int64_t per_part =
        std::max<std::int64_t>(1, static_cast<std::int64_t>(part_bytes_ / dtype_size(dtype)));
    const std::int64_t count = std::max<std::int64_t>(1, (numel + per_part - 1) / per_part);
    const KvLayout& layout = node_->layout();
    std::vector<Part> parts;
    for (std::int64_t j = 0; j < count; ++j) {
      const int shard = kv_shard_of(key, j, layout.shards());
      const std::int64_t offset = j * per_part;
      parts.push_back({layout.shard_process(shard), offset, std::min(per_part, numel - offset)});
    }
    return parts;
  }

  void submit(KvJob job, Completion done, PendingOps::Ticket ticket) {
    job.done = [done = std::move(done), ticket = std::move(ticket)](std::exception_ptr error) mutable {
      done(error);
    };
    node_->submit(std::move(job));
  }

  std::size_t part_bytes_;
  PendingOps ops_;
  std::map<int, KeyState> key_state_;
  std::unique_ptr<KvNode> node_;
};

}  // namespace

std::shared_ptr<KVBackend> make_dist_backend(Engine& engine, std::string type, bool sync,
                                             const KVStoreOptions& options) {
  std::string why_not;
  const bool with_mpi = mpi_runtime::ensure(why_not);
  KvLayout layout;
  if (with_mpi) {
    MPI_Comm_rank(MPI_COMM_WORLD, &layout.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &layout.size);
  }
  layout.servers = options.servers;
  layout.colocated_shards = options.shards == 0 ? layout.size : options.shards;
  if (options.shards < 0 || (options.shards > 0 && options.servers > 0) || options.shards > layout.size) {
    throw std::invalid_argument("depengine::KVStore::create: shards (" + std::to_string(options.shards) +
                                ") counts the worker processes that host a shard: between 0 (all) and the " +
                                std::to_string(layout.size) + " processes, and only without dedicated servers");
  }
  if (options.servers >= layout.size) {
    throw std::invalid_argument("depengine::KVStore::create: " + std::to_string(options.servers) +
                                " dedicated servers need at least one more process for a worker, and the job has " +
                                std::to_string(layout.size) + (with_mpi ? "" : " (" + why_not + ")"));
  }
  if (layout.size == 1) return make_local_backend(engine, std::move(type), false, {.updater = options.updater, .sgd = {}});
  auto backend = std::make_shared<DistBackend>(engine, std::move(type), sync, layout, options);
  if (!layout.is_worker()) backend->serve();
  return backend;
}

}  // namespace depengine::detail
