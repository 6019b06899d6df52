// The KVStore types of one process. "local" sums a key's pushed values on
// the CPU and stores the value there; "device" copies them into buffers on
// their devices, sums the buffers with the Communicator's ring (each device
// adds its neighbour's chunk, no host round trip), and stores the value on
// the device of the key's init. Pulls copy the stored value to each output.

#include <depengine/comm.h>

#include "comm/kv_backend.h"
#include "comm/kv_host_ops.h"

namespace depengine::detail {

namespace {

class LocalBackend final : public KVBackend {
 public:
  LocalBackend(Engine& engine, std::string type, bool on_devices, KVUpdate update)
      : KVBackend(engine, std::move(type)), on_devices_(on_devices), update_(std::move(update)) {
    if (on_devices_) ring_.emplace(local_communicator(engine));
  }

  void init(int key, const Tensor& value) override {
    Entry& e = entries_[key];
    const Device home = on_devices_ ? value.device() : Device::cpu();
    if (!e.stored.defined() || e.stored.device() != home) {
      e.stored = Tensor::empty(engine(), value.shape(), value.dtype(), home);
      e.merged = Tensor();
      e.buffers.clear();
    }
    e.state = Tensor();
    kv_host_ops::copy(value, e.stored, 0, "kvstore:init");
  }

  void push(int key, const std::vector<Tensor>& values, int priority) override {
    Entry& e = entries_.at(key);
    const Tensor* merged = &values[0];
    if (on_devices_) {
      if (values.size() > 1) {
        e.buffers.resize(values.size());
        for (std::size_t j = 0; j < values.size(); ++j) {
          Tensor& b = e.buffers[j];
          if (!b.defined() || b.device() != values[j].device()) {
            b = Tensor::empty(engine(), e.stored.shape(), e.stored.dtype(), values[j].device());
          }
          kv_host_ops::copy(values[j], b, priority, "kvstore:push");
        }
        ring_->allreduce(e.buffers, ReduceOp::sum, {.priority = priority, .name = "kvstore:reduce"});
        merged = &e.buffers[0];
      }
      if (merged->device() != e.stored.device()) merged = &merged_on(e, e.stored.device(), *merged, priority);
    } else if (values.size() > 1 || values[0].device() != Device::cpu()) {
      Tensor& m = merged_buffer(e, Device::cpu());
      kv_host_ops::sum(values, m, priority, "kvstore:merge");
      merged = &m;
    }
    if (update_.replaces()) kv_host_ops::copy(*merged, e.stored, priority, "kvstore:update");
    else update_.apply(key, *merged, e.stored, e.state);
  }

  void pull(int key, const std::vector<Tensor>& outs, int priority) override {
    const Entry& e = entries_.at(key);
    for (const Tensor& out : outs) kv_host_ops::copy(e.stored, out, priority, "kvstore:pull");
  }

  void set_update(KVUpdate update) override { update_ = std::move(update); }
  int num_servers() const override { return 0; }

  std::string describe() const override {
    return type() + ": one process, " + (on_devices_ ? "values summed on their devices by the ring" : "values summed on the CPU");
  }

 private:
  struct Entry {
    Tensor stored, merged, state;
    std::vector<Tensor> buffers;  // "device": one per pushing device
  };

  Tensor& merged_buffer(Entry& e, Device device) {
    if (!e.merged.defined() || e.merged.device() != device) {
      e.merged = Tensor::empty(engine(), e.stored.shape(), e.stored.dtype(), device);
    }
    return e.merged;
  }

  Tensor& merged_on(Entry& e, Device device, const Tensor& sum, int priority) {
    Tensor& m = merged_buffer(e, device);
    kv_host_ops::copy(sum, m, priority, "kvstore:merge");
    return m;
  }

  bool on_devices_;
  KVUpdate update_;
  std::optional<Communicator> ring_;
  std::map<int, Entry> entries_;
};

}  // namespace

std::shared_ptr<KVBackend> make_local_backend(Engine& engine, std::string type, bool on_devices, KVUpdate update) {
  return std::make_shared<LocalBackend>(engine, std::move(type), on_devices, std::move(update));
}

}  // namespace depengine::detail
