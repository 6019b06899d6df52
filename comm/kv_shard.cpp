// KvShard: merging, updating and answering for the parts a shard holds.

#include "comm/kv_shard.h"

#include <cstring>
#include <exception>
#include <stdexcept>

#include "comm/host_math.h"
#include "comm/inline_executor.h"

namespace depengine::detail {

namespace {

// The replies, and the merges of small parts, run inline on the thread that
// made them ready (usually the node's): a merge of a few KiB costs less
// than waking the shard's CPU worker. Larger merges run on that worker, so
// that the node's thread keeps the transfers moving meanwhile.
constexpr Device kInlineDevice = Device::custom(62);
constexpr std::size_t kInlineMergeBytes = std::size_t{256} << 10;

Device merge_device(std::size_t bytes) { return bytes <= kInlineMergeBytes ? kInlineDevice : Device::cpu(); }

std::string part_text(int key, std::uint32_t part) {
  return "key " + std::to_string(key) + (part ? " (part " + std::to_string(part) + ")" : "");
}

std::string layout_text(std::uint32_t dtype, std::int64_t count) {
  return std::to_string(count) + " " + std::string(dtype_name(static_cast<DType>(dtype))) + " elements";
}

}  // namespace

// Hands the stored value to the node once the reply operation runs; if the
// engine skips the operation (the value failed here), the destructor tells
// the worker instead, so that it does not wait for a reply that never comes.
class KvShard::ReplyTicket {
 public:
  ReplyTicket(KvShard& shard, int source, std::uint64_t request) : shard_(&shard), source_(source), request_(request) {
    shard_->replies_pending_.fetch_add(1, std::memory_order_acq_rel);
  }
  ReplyTicket(ReplyTicket&& other) noexcept
      : shard_(std::exchange(other.shard_, nullptr)), source_(other.source_), request_(other.request_) {}
  ReplyTicket& operator=(ReplyTicket&&) = delete;
  ~ReplyTicket() {
    if (shard_ == nullptr) return;
    shard_->replies_.send_status(source_, request_,
                                 "the stored value failed on its server (its update or a merged push failed there)");
    shard_->replies_pending_.fetch_sub(1, std::memory_order_acq_rel);
  }

  void send(Tensor value, Completion done) {
    KvShard* shard = std::exchange(shard_, nullptr);
    shard->replies_.send_value(source_, request_, std::move(value), std::move(done));
    shard->replies_pending_.fetch_sub(1, std::memory_order_acq_rel);
  }

 private:
  KvShard* shard_;
  int source_;
  std::uint64_t request_;
};

KvShard::KvShard(Engine& engine, KvReplies& replies, int workers, bool sync, KVUpdate update)
    : engine_(engine), replies_(replies), workers_(workers), sync_(sync), update_(std::move(update)) {
  engine_.add_device(kInlineDevice, std::make_unique<InlineExecutor>());
}

Tensor KvShard::payload_buffer(const kv_wire::Header& h) const {
  return Tensor::empty(engine_, {h.count}, static_cast<DType>(h.dtype));
}

void KvShard::set_update(KVUpdate update) {
  std::lock_guard lock(update_mutex_);
  update_ = std::move(update);
}

void KvShard::on_message(int source, const kv_wire::Header& h, Tensor payload) {
  using kv_wire::Kind;
  if (h.kind == Kind::alive) return;
  if (h.kind == Kind::finish) {
    ++finished_;
    return;
  }
  if (h.kind == Kind::optimizer) {
    set_update({.updater = {},
                .sgd = SGDOptimizer{.learning_rate = h.sgd[0], .momentum = h.sgd[1], .weight_decay = h.sgd[2],
                                    .rescale_grad = h.sgd[3]}});
    return;
  }
  Entry& e = entries_[{h.key, h.part}];
  switch (h.kind) {
    case Kind::init: return on_init(source, h.key, e, h, std::move(payload));
    case Kind::push: return on_push(h.key, e, h, Addend{.buffer = std::move(payload), .local = nullptr, .read = {}});
    case Kind::pull:
      if (!e.error.empty() || !sync_ || h.round <= e.version) return answer(source, h.request, e);
      e.pulls.push_back({source, h.request, h.round});
      return;
    default: return;
  }
}

// Every worker announces the part; the value is worker 0's. The inits are
// acknowledged once all of them arrived, so that no worker pushes or pulls
// a part that another worker has not announced yet.
void KvShard::on_init(int source, int key, Entry& e, const kv_wire::Header& h, Tensor payload) {
  if (!e.known) {
    e.known = true;
    e.dtype = h.dtype;
    e.count = h.count;
  } else if ((e.dtype != h.dtype || e.count != h.count) && e.error.empty()) {
    fail_entry(e, "the processes initialised " + part_text(key, h.part) + " differently: " +
                      layout_text(e.dtype, e.count) + " and " + layout_text(h.dtype, h.count));
  }
  if (payload.defined() && e.error.empty()) {
    e.stored = std::move(payload);
    e.state = Tensor();
  }
  e.inits.push_back({source, h.request, 0});
  if (static_cast<int>(e.inits.size()) < workers_) return;
  for (const Waiter& w : e.inits) replies_.send_status(w.source, w.request, e.error);
  e.inits.clear();
}

void KvShard::on_local_push(int source, const kv_wire::Header& h, const void* data) {
  (void)source;
  Addend value{.buffer = {}, .local = data, .read = LocalRead(replies_, h.request)};
  on_push(h.key, entries_[{h.key, h.part}], h, std::move(value));
}

Tensor KvShard::own_buffer(const kv_wire::Header& h, Addend value) {
  if (value.buffer.defined()) return std::move(value.buffer);
  Tensor buffer = payload_buffer(h);
  engine_.push(
      [d = buffer.data(), s = value.local, bytes = buffer.nbytes(), read = std::move(value.read)](RunContext&) mutable {
        if (bytes > 0) std::memcpy(d, s, bytes);
        read.release();
      },
      {}, {buffer.var()}, {.name = "kvstore:local_push", .device = merge_device(buffer.nbytes())});
  return buffer;
}

void KvShard::add_into(const Tensor& merged, const kv_wire::Header& h, Addend value) {
  std::vector<Var> reads;
  if (value.buffer.defined()) reads.push_back(value.buffer.var());
  const void* s = value.buffer.defined() ? value.buffer.data() : value.local;
  engine_.push(
      [dtype = static_cast<DType>(h.dtype), d = merged.data(), s, n = h.count, keep = std::move(value.buffer),
       read = std::move(value.read)](RunContext&) mutable {
        host_math::add(dtype, d, s, 0, n);
        read.release();
      },
      reads, {merged.var()}, {.name = "kvstore:merge", .device = merge_device(merged.nbytes())});
}

void KvShard::on_push(int key, Entry& e, const kv_wire::Header& h, Addend value) {
  if (!e.error.empty()) return;
  if (!e.known || !e.stored.defined()) {
    return fail_entry(e, "a push of " + part_text(key, h.part) + " reached its server before the key's init");
  }
  if (e.dtype != h.dtype || e.count != h.count) {
    return fail_entry(e, "a push of " + part_text(key, h.part) + " has " + layout_text(h.dtype, h.count) +
                             ", initialised with " + layout_text(e.dtype, e.count));
  }
  if (!sync_) {
    apply(key, e, own_buffer(h, std::move(value)));
    ++e.version;
    return answer_ready_pulls(e);
  }
  Round& r = e.rounds[h.round];
  if (r.merged.defined()) {
    add_into(r.merged, h, std::move(value));
  } else if (value.buffer.defined()) {
    r.merged = std::move(value.buffer);
    if (r.held) add_into(r.merged, h, std::move(*r.held));
    r.held.reset();
  } else {
    r.held = std::move(value);
  }
  ++r.arrived;
  if (r.arrived == workers_ && r.held) {
    r.merged = own_buffer(h, std::move(*r.held));
    r.held.reset();
  }
  // Rounds are applied in order; a fast worker's next round waits.
  while (!e.rounds.empty() && e.rounds.begin()->first == e.version && e.rounds.begin()->second.arrived == workers_) {
    const Tensor merged = std::move(e.rounds.begin()->second.merged);
    e.rounds.erase(e.rounds.begin());
    apply(key, e, merged);  // a failed update clears the rounds
    ++e.version;
  }
  answer_ready_pulls(e);
}

void KvShard::apply(int key, Entry& e, const Tensor& merged) {
  KVUpdate update;
  {
    std::lock_guard lock(update_mutex_);
    update = update_;
  }
  if (update.replaces()) {
    e.stored = merged;
    return;
  }
  try {
    update.apply(key, merged, e.stored, e.state);
  } catch (const std::exception& error) {
    fail_entry(e, std::string("the updater of key ") + std::to_string(key) + " failed on its server: " + error.what());
  }
}

void KvShard::answer_ready_pulls(Entry& e) {
  std::vector<Waiter> waiting;
  waiting.swap(e.pulls);
  for (const Waiter& w : waiting) {
    if (!e.error.empty() || w.round <= e.version) answer(w.source, w.request, e);
    else e.pulls.push_back(w);
  }
}

void KvShard::answer(int source, std::uint64_t request, Entry& e) {
  if (!e.error.empty()) return replies_.send_status(source, request, e.error);
  if (!e.stored.defined()) return replies_.send_status(source, request, "a pull reached its server before the key's init");
  const Tensor value = e.stored;
  engine_.push_async(
      [ticket = ReplyTicket(*this, source, request), value](RunContext&, Completion done) mutable {
        ticket.send(value, std::move(done));
      },
      {value.var()}, {}, {.name = "kvstore:reply", .device = kInlineDevice});
}

void KvShard::fail_entry(Entry& e, std::string error) {
  e.error = std::move(error);
  e.rounds.clear();
  answer_ready_pulls(e);
}

}  // namespace depengine::detail
