// KvShard: merging, updating and answering for the parts a shard holds.

#include "comm/kv_shard.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <stdexcept>

#include "comm/host_math.h"
#include "comm/inline_executor.h"

namespace depengine::detail {

namespace {

// The replies, and the merges up to `inline_merge_bytes`, run inline on the
// thread that made them ready (usually the node's): a merge of a few KiB
// costs less than waking the shard's CPU worker. Larger merges run on that
// worker, so that the node's thread keeps the transfers moving meanwhile.
constexpr Device kInlineDevice = Device::custom(62);

// merged += addend, then out = merged, a block at a time so that the copy
// reads the sum from the cache. `out` may be `addend` (a pushpull into the
// pushed tensor): each block of it is read before it is written.
void add_then_copy(DType dtype, void* merged, const void* addend, void* out, std::int64_t count) {
  constexpr std::int64_t kBlockBytes = std::int64_t{32} << 10;
  const std::int64_t block = kBlockBytes / static_cast<std::int64_t>(dtype_size(dtype));
  for (std::int64_t first = 0; first < count; first += block) {
    const std::int64_t n = std::min(block, count - first);
    host_math::add(dtype, merged, addend, first, n);
    host_math::copy(dtype, out, first, merged, first, n);
  }
}

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

  /// The value is already in the own process's output.
  void send_written(Completion done) {
    KvShard* shard = std::exchange(shard_, nullptr);
    shard->replies_.local_value_written(request_, std::move(done));
    shard->replies_pending_.fetch_sub(1, std::memory_order_acq_rel);
  }

 private:
  KvShard* shard_;
  int source_;
  std::uint64_t request_;
};

KvShard::KvShard(Engine& engine, KvReplies& replies, int workers, bool sync, KVUpdate update,
                 std::size_t inline_merge_bytes)
    : engine_(engine),
      replies_(replies),
      workers_(workers),
      sync_(sync),
      update_(std::move(update)),
      inline_merge_bytes_(inline_merge_bytes) {
  engine_.add_device(kInlineDevice, std::make_unique<InlineExecutor>());
}

Device KvShard::merge_device(std::size_t bytes) const {
  return bytes <= inline_merge_bytes_ ? kInlineDevice : Device::cpu();
}

Tensor KvShard::payload_buffer(const kv_wire::Header& h) const {
  return Tensor::empty(engine_, {static_cast<std::int64_t>(h.count)}, static_cast<DType>(h.dtype));
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
    case Kind::push:
      return on_push(source, h.key, e, h,
                     Addend{.buffer = std::move(payload), .local = nullptr, .out = nullptr, .read = {}});
    case Kind::pull:
      e.pulls.push_back({.source = source, .request = h.request, .round = sync_ ? h.round : 0, .own_output = false});
      return answer_ready_pulls(e);
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

void KvShard::on_local_push(int source, const kv_wire::Header& h, const void* data, void* out) {
  Addend value{.buffer = {}, .local = data, .out = out, .read = LocalRead(replies_, h.request)};
  Entry& e = entries_[{h.key, h.part}];
  e.own_rounds = std::max(e.own_rounds, h.round + 1);
  on_push(source, h.key, e, h, std::move(value));
}

void KvShard::release_held_pushes() {
  for (auto& [part, e] : entries_) {
    for (auto& [round, r] : e.rounds) r.held.reset();
  }
}

bool KvShard::lacks_own_push(const kv_wire::Header& h) const {
  if (!sync_) return false;
  const auto it = entries_.find({h.key, h.part});
  return it != entries_.end() && it->second.error.empty() && it->second.own_rounds <= h.round;
}

Tensor KvShard::own_buffer(const kv_wire::Header& h, Addend value, void* out) {
  if (value.buffer.defined()) return std::move(value.buffer);
  Tensor buffer = payload_buffer(h);
  engine_.push(
      [d = buffer.data(), s = value.local, out, bytes = buffer.nbytes(), read = std::move(value.read)](RunContext&) mutable {
        if (bytes > 0) std::memcpy(d, s, bytes);
        if (bytes > 0 && out != nullptr && out != s) std::memcpy(out, s, bytes);
        read.release();
      },
      {}, {buffer.var()}, {.name = "kvstore:local_push", .device = merge_device(buffer.nbytes())});
  return buffer;
}

void KvShard::add_into(const Tensor& merged, const kv_wire::Header& h, Addend value, void* out) {
  std::vector<Var> reads;
  if (value.buffer.defined()) reads.push_back(value.buffer.var());
  const void* s = value.buffer.defined() ? value.buffer.data() : value.local;
  engine_.push(
      [dtype = static_cast<DType>(h.dtype), d = merged.data(), s, out, n = h.count, keep = std::move(value.buffer),
       read = std::move(value.read)](RunContext&) mutable {
        if (out != nullptr) add_then_copy(dtype, d, s, out, n);
        else host_math::add(dtype, d, s, 0, n);
        read.release();
      },
      reads, {merged.var()}, {.name = "kvstore:merge", .device = merge_device(merged.nbytes())});
}

KVUpdate KvShard::current_update() {
  std::lock_guard lock(update_mutex_);
  return update_;
}

// A push that wants the value back waits like the pull that would follow
// it: for its round to be applied (dist_sync), or for nothing (dist_async:
// its own push is applied at once).
void KvShard::on_push(int source, int key, Entry& e, const kv_wire::Header& h, Addend value) {
  if (h.wants_value) {
    e.pulls.push_back({.source = source,
                       .request = h.request,
                       .round = sync_ ? h.round + 1 : 0,
                       .own_output = sync_ && value.out != nullptr});
  }
  merge_push(key, e, h, std::move(value));
  answer_ready_pulls(e);
}

void KvShard::merge_push(int key, Entry& e, const kv_wire::Header& h, Addend value) {
  if (!e.error.empty()) return;
  if (!e.known || !e.stored.defined()) {
    return fail_entry(e, "a push of " + part_text(key, h.part) + " reached its server before the key's init");
  }
  if (e.dtype != h.dtype || e.count != h.count) {
    return fail_entry(e, "a push of " + part_text(key, h.part) + " has " + layout_text(h.dtype, h.count) +
                             ", initialised with " + layout_text(e.dtype, e.count));
  }
  if (!sync_) {
    apply(key, e, own_buffer(h, std::move(value), nullptr), false);
    ++e.version;
    return;
  }
  Round& r = e.rounds[h.round];
  if (value.local != nullptr) {
    r.held = std::move(value);
  } else if (r.merged.defined()) {
    add_into(r.merged, h, std::move(value), nullptr);
  } else {
    r.merged = std::move(value.buffer);
  }
  ++r.arrived;
  if (r.arrived == workers_ && r.held) {
    // The round's last merge. Without an update the sum is the new value,
    // which the own pushpull pulls: that merge writes it to the output too.
    Addend own = std::move(*r.held);
    r.held.reset();
    r.wrote_out = own.out != nullptr && current_update().replaces();
    void* out = r.wrote_out ? own.out : nullptr;
    if (r.merged.defined()) add_into(r.merged, h, std::move(own), out);
    else r.merged = own_buffer(h, std::move(own), out);
  }
  // Rounds are applied in order; a fast worker's next round waits.
  while (!e.rounds.empty() && e.rounds.begin()->first == e.version && e.rounds.begin()->second.arrived == workers_) {
    const Tensor merged = std::move(e.rounds.begin()->second.merged);
    const bool wrote_out = e.rounds.begin()->second.wrote_out;
    e.rounds.erase(e.rounds.begin());
    apply(key, e, merged, wrote_out);  // a failed update clears the rounds
    ++e.version;
    if (wrote_out) e.wrote_out_version = e.version;
  }
}

void KvShard::apply(int key, Entry& e, const Tensor& merged, bool forced_replace) {
  const KVUpdate update = current_update();
  if (forced_replace || update.replaces()) {
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
    if (!e.error.empty() || w.round <= e.version) answer(w, e);
    else e.pulls.push_back(w);
  }
}

// The own pushpull of round r is answered at version r + 1 exactly: the
// process pushes round r + 1 only after this reply. So when that round's
// merge wrote the output, the reply only says so; it runs after the merge
// (it reads the value's variable, which the merge writes).
void KvShard::answer(const Waiter& w, Entry& e) {
  if (!e.error.empty()) return replies_.send_status(w.source, w.request, e.error);
  if (!e.stored.defined()) {
    return replies_.send_status(w.source, w.request, "a pull reached its server before the key's init");
  }
  const Tensor value = e.stored;
  const bool written = w.own_output && e.wrote_out_version == e.version && w.round == e.version;
  engine_.push_async(
      [ticket = ReplyTicket(*this, w.source, w.request), value, written](RunContext&, Completion done) mutable {
        if (written) ticket.send_written(std::move(done));
        else ticket.send(value, std::move(done));
      },
      {value.var()}, {}, {.name = "kvstore:reply", .device = kInlineDevice});
}

void KvShard::fail_entry(Entry& e, std::string error) {
  e.error = std::move(error);
  e.rounds.clear();
  answer_ready_pulls(e);
}

}  // namespace depengine::detail
