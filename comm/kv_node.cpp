// KvNode: the progress thread of a dist KVStore and its MPI traffic.

#include "comm/kv_node.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <thread>

#include "comm/mpi_runtime.h"
#include "sync/usable_cores.h"

namespace depengine::detail {

namespace {

// A process hosting a shard keeps polling (yielding) this long after its
// last message, as the next one usually follows soon, then sleeps between
// polls, longer each time up to kIdlePollMax.
constexpr auto kSpinAfterActivity = std::chrono::microseconds(200);
constexpr auto kIdlePollMax = std::chrono::microseconds(2000);
constexpr auto kIdlePollMin = std::chrono::microseconds(20);

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) {
    throw std::runtime_error(std::string("depengine::KVStore: ") + call + " failed: " +
                             mpi_runtime::mpi_error_text(code));
  }
}

std::exception_ptr kv_error(const std::string& what) {
  return std::make_exception_ptr(std::runtime_error("depengine::KVStore: " + what));
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

int bytes_count(std::size_t bytes) { return static_cast<int>(bytes); }

// Whether `r` lands on memory that the job's message of the same request
// sends its payload from.
bool receives_into_own_payload(const KvJob& job, const KvJob::Receive& r) {
  const char* into = static_cast<const char*>(r.into);
  for (const KvJob::Message& m : job.messages) {
    if (m.header.request != r.request || m.process != r.process || !m.header.has_payload) continue;
    const char* from = static_cast<const char*>(m.payload);
    if (from < into + r.bytes && into < from + m.bytes) return true;
  }
  return false;
}

// A merge on the shard's CPU worker runs beside the progress thread, which
// keeps the transfers moving meanwhile; without a core per thread (fewer
// than two per process on this machine) the worker only takes turns with
// it, and a reply it makes ready waits for the progress thread's next round
// of polls: then every merge runs inline on the progress thread.
std::size_t inline_merge_bytes(MPI_Comm world) {
  int processes_here = 1;
  MPI_Comm here = MPI_COMM_NULL;
  if (MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &here) == MPI_SUCCESS) {
    MPI_Comm_size(here, &processes_here);
    MPI_Comm_free(&here);
  }
  // This process's share of the machine's cores, or fewer where its
  // affinity says so (mpirun binds each process to a core by default).
  const int machine = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int cores = std::min(depengine::detail::usable_cores(), machine / processes_here);
  return cores < 2 ? std::numeric_limits<std::size_t>::max() : KvShard::kInlineMergeBytes;
}

}  // namespace

KvNode::KvNode(KvLayout layout, bool sync, KVUpdate update)
    : layout_(layout), sync_(sync), timeout_(mpi_runtime::timeout_seconds()) {
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup");
  check_mpi(MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  check_mpi(MPI_Comm_split(world_, layout_.is_worker() ? 0 : MPI_UNDEFINED, layout_.rank, &workers_),
            "MPI_Comm_split");
  if (workers_ != MPI_COMM_NULL) {
    check_mpi(MPI_Comm_set_errhandler(workers_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
  }
  int* tag_upper_bound = nullptr;
  int has_bound = 0;
  MPI_Comm_get_attr(world_, MPI_TAG_UB, &tag_upper_bound, &has_bound);
  const int limit = has_bound ? *tag_upper_bound : 32767;
  reply_tags_ = std::min<std::uint64_t>(kv_wire::kReplyTags, static_cast<std::uint64_t>(limit - kv_wire::kFirstReplyTag));
  version_ = mpi_runtime::library_version();
  const std::size_t merge_inline_up_to = inline_merge_bytes(world_);
  if (layout_.hosts_shard()) {
    server_engine_ = std::make_unique<Engine>(EngineOptions{.cpu_threads = 1, .read_environment = false});
    shard_.emplace(*server_engine_, *this, layout_.workers(), sync_, std::move(update), merge_inline_up_to);
  }
  last_message_ = Clock::now();
  last_alive_sent_ = last_message_;
  heard_from_.assign(static_cast<std::size_t>(layout_.workers()), last_message_);
  finished_from_.assign(static_cast<std::size_t>(layout_.workers()), false);
  if (shard_) {
    check_mpi(MPI_Irecv(&header_in_, sizeof header_in_, MPI_BYTE, MPI_ANY_SOURCE, kv_wire::kHeaderTag, world_,
                        &header_recv_),
              "MPI_Irecv");
  }
  if (layout_.is_worker()) {
    check_mpi(MPI_Irecv(&status_in_, sizeof status_in_, MPI_BYTE, MPI_ANY_SOURCE, kv_wire::kStatusTag, world_,
                        &status_recv_),
              "MPI_Irecv");
  }
  mpi_runtime::group_opened();
  thread_ = std::thread([this] { run(); });
}

KvNode::~KvNode() {
  // Reply operations still queued in the engine call into the shard; they
  // wait for local work only, so they come.
  while (shard_ && shard_->replies_pending() > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
    news_ = true;
  }
  wake_.notify_one();
  thread_.join();
  if (!broken_) {
    for (MPI_Request* r : {&header_recv_, &status_recv_}) {
      if (*r == MPI_REQUEST_NULL) continue;
      MPI_Cancel(r);
      MPI_Wait(r, MPI_STATUS_IGNORE);
    }
    if (workers_ != MPI_COMM_NULL) MPI_Comm_free(&workers_);
    MPI_Comm_free(&world_);
  }
  mpi_runtime::group_closed();
}

std::uint64_t KvNode::new_requests(std::uint64_t count) {
  std::lock_guard lock(mutex_);
  const std::uint64_t first = next_request_;
  next_request_ += count;
  return first;
}

int KvNode::reply_tag(std::uint64_t request) const {
  return kv_wire::kFirstReplyTag + static_cast<int>(request % reply_tags_);
}

void KvNode::submit(KvJob job) {
  std::unique_lock lock(mutex_);
  if (broken_ || stop_) {
    const std::exception_ptr error = broken_ ? broken_ : kv_error("the store is shutting down");
    lock.unlock();
    job.done(error);
    return;
  }
  inbox_.jobs.push_back(std::move(job));
  news_ = true;
  wake_.notify_one();
}

void KvNode::send_value(int process, std::uint64_t request, Tensor value, Completion done) {
  if (process == layout_.rank) return copy_reply_locally(request, &value, std::move(done));
  ValueSend send;
  send.process = process;
  send.request = request;
  send.value = std::move(value);
  send.done = std::move(done);
  // A reply made ready on the progress thread (an inline merge) leaves at
  // once, not after the rest of the thread's round of polls.
  if (t_progress_node == this) {
    if (broken_) send.done(broken_);
    else post_value(std::move(send));
    return;
  }
  std::unique_lock lock(mutex_);
  if (broken_ || stop_) {
    const std::exception_ptr error = broken_ ? broken_ : kv_error("the store is shutting down");
    lock.unlock();
    send.done(error);
    return;
  }
  inbox_.values.push_back(std::move(send));
  news_ = true;
  wake_.notify_one();
}

void KvNode::send_status(int process, std::uint64_t request, std::string error) {
  StatusSend s;
  s.process = process;
  s.status.request = request;
  s.status.failed = error.empty() ? 0 : 1;
  std::strncpy(s.status.text, error.c_str(), sizeof s.status.text - 1);
  std::lock_guard lock(mutex_);
  if (broken_ || stop_) return;
  inbox_.statuses.push_back(s);
  news_ = true;
  wake_.notify_one();
}

void KvNode::local_push_read(std::uint64_t request) {
  {
    std::lock_guard lock(mutex_);
    inbox_.local_reads_done.push_back(request);
    news_ = true;
  }
  wake_.notify_one();
}

void KvNode::local_value_written(std::uint64_t request, Completion done) {
  copy_reply_locally(request, nullptr, std::move(done));
}

// The reply of this process's shard to this process: copied into the
// receive's memory on the thread that runs the reply operation. A receive
// being copied into is not revoked until the copy ends (its job waits).
void KvNode::copy_reply_locally(std::uint64_t request, const Tensor* value, Completion done) {
  LocalReceive receive;
  {
    std::lock_guard lock(local_mutex_);
    auto it = local_receives_.find(request);
    if (it == local_receives_.end()) {
      done(kv_error("a reply came after its request ended"));
      return;
    }
    it->second.copying = true;
    receive = it->second;
  }
  if (const std::size_t bytes = value ? std::min(receive.bytes, value->nbytes()) : 0; bytes > 0) {
    std::memcpy(receive.into, value->data(), bytes);
  }
  {
    std::lock_guard lock(local_mutex_);
    local_receives_.erase(request);
  }
  local_copied_.notify_all();
  {
    std::lock_guard lock(mutex_);
    inbox_.local_receives_done.push_back(request);
    news_ = true;
  }
  wake_.notify_one();
  done(nullptr);
}

void KvNode::revoke_local_receives(const ActiveJob& a) {
  std::unique_lock lock(local_mutex_);
  for (const KvJob::Receive& r : a.job.receives) {
    if (r.process != layout_.rank) continue;
    local_copied_.wait(lock, [&] {
      auto it = local_receives_.find(r.request);
      return it == local_receives_.end() || !it->second.copying;
    });
    local_receives_.erase(r.request);
  }
}

void KvNode::set_update(KVUpdate update) {
  if (shard_) shard_->set_update(std::move(update));
}

void KvNode::barrier() {
  std::promise<void> waiter;
  std::future<void> reached = waiter.get_future();
  {
    std::lock_guard lock(mutex_);
    if (broken_) std::rethrow_exception(broken_);
    inbox_.barriers.push_back(std::move(waiter));
    news_ = true;
  }
  wake_.notify_one();
  reached.get();
}

void KvNode::finish() {
  if (layout_.is_worker()) {
    {
      std::lock_guard lock(mutex_);
      finish_sent_ = true;
    }
    std::promise<void> sent;
    std::future<void> all_sent = sent.get_future();
    KvJob job;
    for (int s = 0; s < layout_.shards(); ++s) {
      kv_wire::Header h;
      h.kind = kv_wire::Kind::finish;
      h.worker = layout_.rank;
      job.messages.push_back({.process = layout_.shard_process(s), .header = h});
    }
    job.done = [&sent](std::exception_ptr) { sent.set_value(); };
    submit(std::move(job));
    all_sent.wait();
  }
  if (shard_) wait_released();
}

void KvNode::serve() {
  wait_released();
  std::lock_guard lock(mutex_);
  if (broken_) std::rethrow_exception(broken_);
}

void KvNode::wait_released() {
  std::unique_lock lock(mutex_);
  finishing_ = true;
  news_ = true;
  wake_.notify_one();
  released_cv_.wait(lock, [this] { return released_; });
}

std::string KvNode::describe() const {
  std::string role = layout_.is_worker() ? "worker " + std::to_string(layout_.rank) + " of " +
                                               std::to_string(layout_.workers())
                                         : "server " + std::to_string(layout_.rank - layout_.workers()) + " of " +
                                               std::to_string(layout_.servers);
  std::string shards =
      layout_.servers > 0 ? std::to_string(layout_.servers) + " dedicated server processes"
      : layout_.shards() == layout_.size
          ? std::to_string(layout_.shards()) + " server shards, one in each process"
      : layout_.shards() == 1 ? std::string("1 server shard, in process 0")
                              : std::to_string(layout_.shards()) + " server shards, in processes 0 to " +
                                    std::to_string(layout_.shards() - 1);
  return role + ", " + shards + ", MPI (" + version_ + ")";
}

std::exception_ptr KvNode::broken_error() const { return broken_; }

bool KvNode::busy() const {
  const bool receiving =
      std::any_of(payloads_.begin(), payloads_.end(), [](const PendingPayload& p) { return !p.deferred; });
  return !jobs_.empty() || receiving || !value_sends_.empty() || !status_sends_.empty() || barrier_;
}

void KvNode::run() {
  t_progress_node = this;
  auto idle_poll = kIdlePollMin;
  for (;;) {
    Inbox in;
    bool stopping = false;
    {
      std::lock_guard lock(mutex_);
      std::swap(in, inbox_);
      news_ = false;
      stopping = stop_;
    }
    const bool had_news = !in.jobs.empty() || !in.values.empty() || !in.statuses.empty() || !in.barriers.empty() ||
                          !in.local_reads_done.empty() || !in.local_receives_done.empty();
    take_inbox(in);
    if (stopping && !busy()) return;
    const auto before = last_message_;
    poll_headers();
    poll_statuses();
    poll_jobs();
    poll_sends();
    poll_barrier();
    check_deadlines();
    update_released();
    send_alive();
    if (busy()) {
      std::this_thread::yield();
      idle_poll = kIdlePollMin;
      last_active_ = Clock::now();
      continue;
    }
    if (had_news || last_message_ != before) {
      idle_poll = kIdlePollMin;
      last_active_ = Clock::now();
    }
    if (shard_ && !broken_ && Clock::now() - last_active_ < kSpinAfterActivity) {
      std::this_thread::yield();
      continue;
    }
    std::unique_lock lock(mutex_);
    if (shard_ && !broken_) {
      // Unannounced messages may come: poll again after a growing sleep.
      wake_.wait_for(lock, idle_poll, [this] { return news_; });
      idle_poll = std::min<std::chrono::microseconds>(idle_poll * 2, kIdlePollMax);
    } else if (layout_.is_worker()) {
      wake_.wait_for(lock, alive_interval(), [this] { return news_; });
    } else {
      wake_.wait(lock, [this] { return news_; });
    }
  }
}

void KvNode::send_alive() {
  const auto now = Clock::now();
  if (!layout_.is_worker() || broken_ || now - last_alive_sent_ < alive_interval()) return;
  {
    std::lock_guard lock(mutex_);
    if (finish_sent_) return;
  }
  last_alive_sent_ = now;
  KvJob job;
  for (int s = 0; s < layout_.shards(); ++s) {
    if (layout_.shard_process(s) == layout_.rank) continue;
    kv_wire::Header h;
    h.kind = kv_wire::Kind::alive;
    h.worker = layout_.rank;
    job.messages.push_back({.process = layout_.shard_process(s), .header = h});
  }
  if (job.messages.empty()) return;
  job.done = [](std::exception_ptr) {};
  post_job(std::move(job));
}

std::string KvNode::silent_workers() const {
  const auto now = Clock::now();
  std::string silent;
  for (int w = 0; w < layout_.workers(); ++w) {
    const auto i = static_cast<std::size_t>(w);
    if (finished_from_[i] || now - heard_from_[i] <= std::chrono::duration<double>(timeout_)) continue;
    silent += (silent.empty() ? "" : ", ") + std::to_string(w);
  }
  return silent;
}

void KvNode::take_inbox(Inbox& in) {
  for (std::uint64_t request : in.local_reads_done) {
    if (auto it = watched_.find(request); it != watched_.end()) --it->second->local_reads;
  }
  for (std::uint64_t request : in.local_receives_done) {
    if (auto it = watched_.find(request); it != watched_.end()) --it->second->local_receives;
  }
  if (broken_) {
    for (KvJob& job : in.jobs) job.done(broken_);
    for (ValueSend& v : in.values) v.done(broken_);
    for (auto& b : in.barriers) b.set_exception(broken_);
    return;
  }
  for (KvJob& job : in.jobs) post_job(std::move(job));
  for (ValueSend& v : in.values) post_value(std::move(v));
  for (StatusSend& s : in.statuses) post_status(s);
  for (auto& waiter : in.barriers) {
    if (barrier_) {
      // One barrier at a time: the next one starts when this one ends.
      std::lock_guard lock(mutex_);
      inbox_.barriers.push_back(std::move(waiter));
      news_ = true;
      continue;
    }
    MPI_Request r = MPI_REQUEST_NULL;
    const int rc = MPI_Ibarrier(workers_, &r);
    if (rc != MPI_SUCCESS) {
      waiter.set_exception(kv_error("MPI_Ibarrier failed: " + mpi_runtime::mpi_error_text(rc)));
      continue;
    }
    barrier_.emplace(r, std::move(waiter));
    barrier_started_ = Clock::now();
  }
}

// Receives first, so that a reply finds its buffer; then each header and
// its payload, in order.
void KvNode::post_job(KvJob job) {
  ActiveJob& a = jobs_.emplace_back();
  a.job = std::move(job);
  a.started = Clock::now();
  a.awaited = static_cast<int>(a.job.acknowledged.size());
  int rc = MPI_SUCCESS;
  for (std::size_t i = 0; i < a.job.receives.size(); ++i) {
    const KvJob::Receive& r = a.job.receives[i];
    MPI_Request request = MPI_REQUEST_NULL;
    if (r.process == layout_.rank) {
      std::lock_guard lock(local_mutex_);
      local_receives_[r.request] = {.into = r.into, .bytes = r.bytes, .copying = false};
      ++a.local_receives;
    } else if (receives_into_own_payload(a.job, r)) {
      a.deferred.push_back({.receive = i});
    } else if (rc == MPI_SUCCESS) {
      rc = MPI_Irecv(r.into, bytes_count(r.bytes), MPI_BYTE, r.process, reply_tag(r.request), world_, &request);
    }
    a.requests.push_back(request);
    watched_[r.request] = &a;
  }
  for (std::uint64_t request : a.job.acknowledged) watched_[request] = &a;
  for (const KvJob::Message& m : a.job.messages) {
    if (m.process == layout_.rank) {
      deliver_locally(a, m);
      continue;
    }
    MPI_Request request = MPI_REQUEST_NULL;
    if (rc == MPI_SUCCESS) {
      rc = MPI_Isend(&m.header, sizeof m.header, MPI_BYTE, m.process, kv_wire::kHeaderTag, world_, &request);
    }
    a.requests.push_back(request);
    if (m.header.has_payload) {
      request = MPI_REQUEST_NULL;
      if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(m.payload, bytes_count(m.bytes), MPI_BYTE, m.process, kv_wire::kPayloadTag, world_, &request);
      }
      for (DeferredReceive& d : a.deferred) {
        if (a.job.receives[d.receive].request == m.header.request) d.send = a.requests.size();
      }
      a.requests.push_back(request);
    }
  }
  if (rc != MPI_SUCCESS) break_node("MPI failed to start a request: " + mpi_runtime::mpi_error_text(rc));
}

// A message to this process's own shard: handed over directly, in the
// order of the worker's messages; a push's value is read in place, and a
// pushpull's output (its receive of the same request) handed with it.
void KvNode::deliver_locally(ActiveJob& a, const KvJob::Message& m) {
  const kv_wire::Header& h = m.header;
  last_message_ = Clock::now();
  heard_from_[static_cast<std::size_t>(layout_.rank)] = last_message_;
  if (h.kind == kv_wire::Kind::finish) finished_from_[static_cast<std::size_t>(layout_.rank)] = true;
  if (h.kind == kv_wire::Kind::push && h.has_payload) {
    ++a.local_reads;
    watched_[h.request] = &a;
    void* out = nullptr;
    if (h.wants_value) {
      for (const KvJob::Receive& r : a.job.receives) {
        if (r.request == h.request && r.process == layout_.rank && r.bytes == m.bytes) out = r.into;
      }
    }
    shard_->on_local_push(layout_.rank, h, m.payload, out);
    return;
  }
  Tensor payload;
  if (h.has_payload) {
    payload = shard_->payload_buffer(h);
    if (payload.nbytes() > 0) std::memcpy(payload.data(), m.payload, payload.nbytes());
  }
  shard_->on_message(layout_.rank, h, std::move(payload));
}

void KvNode::post_value(ValueSend send) {
  const int rc = MPI_Isend(send.value.data(), bytes_count(send.value.nbytes()), MPI_BYTE, send.process,
                           reply_tag(send.request), world_, &send.mpi);
  if (rc != MPI_SUCCESS) {
    send.done(kv_error("MPI_Isend of a reply failed: " + mpi_runtime::mpi_error_text(rc)));
    return;
  }
  send.started = Clock::now();
  value_sends_.push_back(std::move(send));
}

void KvNode::post_status(StatusSend send) {
  if (send.process == layout_.rank) return on_status(send.status);
  status_sends_.push_back(send);
  StatusSend& s = status_sends_.back();
  s.started = Clock::now();
  const int rc = MPI_Isend(&s.status, sizeof s.status, MPI_BYTE, s.process, kv_wire::kStatusTag, world_, &s.mpi);
  if (rc != MPI_SUCCESS) status_sends_.pop_back();
}

// A header for the shard, handled in the order its sender sent it: a
// message waits behind an earlier one of the same worker whose payload is
// still arriving (the payloads travel on their own tag), so that a worker's
// pull always follows its push.
void KvNode::poll_headers() {
  while (header_recv_ != MPI_REQUEST_NULL) {
    int flag = 0;
    MPI_Status status;
    if (MPI_Test(&header_recv_, &flag, &status) != MPI_SUCCESS) return break_node("MPI_Test of a header failed");
    if (!flag) break;
    last_message_ = Clock::now();
    PendingPayload& p = payloads_.emplace_back();
    p.source = status.MPI_SOURCE;
    p.header = header_in_;
    p.started = Clock::now();
    if (p.source < layout_.workers()) {
      heard_from_[static_cast<std::size_t>(p.source)] = last_message_;
      if (p.header.kind == kv_wire::Kind::finish) finished_from_[static_cast<std::size_t>(p.source)] = true;
    }
    if (p.header.has_payload) {
      p.into = shard_->payload_buffer(p.header);
      p.deferred = true;  // posted by post_deferred_payloads, in order
    }
    const int rc = MPI_Irecv(&header_in_, sizeof header_in_, MPI_BYTE, MPI_ANY_SOURCE, kv_wire::kHeaderTag, world_,
                             &header_recv_);
    if (rc != MPI_SUCCESS) return break_node("MPI_Irecv of a header failed: " + mpi_runtime::mpi_error_text(rc));
  }
  post_deferred_payloads();
  std::vector<int> waiting_sources;
  for (auto it = payloads_.begin(); it != payloads_.end();) {
    if (std::find(waiting_sources.begin(), waiting_sources.end(), it->source) != waiting_sources.end()) {
      ++it;
      continue;
    }
    int flag = it->deferred ? 0 : 1;
    if (it->request != MPI_REQUEST_NULL && MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      return break_node("MPI_Test of a payload failed");
    }
    if (!flag) {
      waiting_sources.push_back(it->source);
      ++it;
      continue;
    }
    last_message_ = Clock::now();
    shard_->on_message(it->source, it->header, std::move(it->into));
    it = payloads_.erase(it);
  }
}

// Another worker's pushpull that reaches a shard before this process's own
// push of the round waits there to be received. The round cannot be merged
// before anyway, and receiving it would hold the progress thread (the
// receiver copies) while this process's own requests wait to be noticed:
// the worker ahead would stay ahead, and the two processes would take turns
// instead of copying at the same time.
bool KvNode::defers_payload(const PendingPayload& p) const {
  const kv_wire::Header& h = p.header;
  return layout_.is_worker() && p.source != layout_.rank && h.kind == kv_wire::Kind::push && h.wants_value &&
         shard_->lacks_own_push(h);
}

bool KvNode::post_payload_receive(PendingPayload& p) {
  p.deferred = false;
  p.started = Clock::now();
  const int rc = MPI_Irecv(p.into.data(), bytes_count(p.into.nbytes()), MPI_BYTE, p.source, kv_wire::kPayloadTag,
                           world_, &p.request);
  if (rc == MPI_SUCCESS) return true;
  break_node("MPI_Irecv of a payload failed: " + mpi_runtime::mpi_error_text(rc));
  return false;
}

// A payload is received once defers_payload no longer holds, or once a
// later message of the same worker is not deferred (no other message may
// wait for a round). MPI matches a worker's payloads to the receives in
// the order both were made, so they are posted in the order they came.
void KvNode::post_deferred_payloads() {
  if (std::none_of(payloads_.begin(), payloads_.end(), [](const PendingPayload& p) { return p.deferred; })) return;
  std::vector<int> undeferred_after;  // sources with a later message that is not deferred
  std::vector<PendingPayload*> due;    // last first
  for (auto it = payloads_.rbegin(); it != payloads_.rend(); ++it) {
    const bool later = std::find(undeferred_after.begin(), undeferred_after.end(), it->source) !=
                       undeferred_after.end();
    if (it->deferred) {
      if (!later && defers_payload(*it)) continue;
      due.push_back(&*it);
    }
    if (!later) undeferred_after.push_back(it->source);
  }
  for (auto p = due.rbegin(); p != due.rend(); ++p) {
    if (!post_payload_receive(**p)) return;
  }
}

void KvNode::poll_statuses() {
  while (status_recv_ != MPI_REQUEST_NULL) {
    int flag = 0;
    if (MPI_Test(&status_recv_, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) return break_node("MPI_Test failed");
    if (!flag) return;
    const kv_wire::Status s = status_in_;
    const int rc = MPI_Irecv(&status_in_, sizeof status_in_, MPI_BYTE, MPI_ANY_SOURCE, kv_wire::kStatusTag, world_,
                             &status_recv_);
    if (rc != MPI_SUCCESS) return break_node("MPI_Irecv of a status failed: " + mpi_runtime::mpi_error_text(rc));
    on_status(s);
  }
}

void KvNode::on_status(const kv_wire::Status& s) {
  auto it = watched_.find(s.request);
  if (it == watched_.end()) return;
  ActiveJob& a = *it->second;
  if (s.failed) {
    if (!a.error) {
      a.error = kv_error(std::string(s.text, strnlen(s.text, sizeof s.text)));
      // The replies will not come: end their receives.
      for (std::size_t i = 0; i < a.job.receives.size() && i < a.requests.size(); ++i) {
        if (a.requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&a.requests[i]);
      }
    }
    a.awaited = 0;
  } else if (a.awaited > 0) {
    --a.awaited;
  }
}

void KvNode::post_deferred_receives(ActiveJob& a) {
  for (auto d = a.deferred.begin(); d != a.deferred.end() && !a.error;) {
    int sent = 1;
    int rc = MPI_SUCCESS;
    if (d->send != DeferredReceive::kNoSend) rc = MPI_Test(&a.requests[d->send], &sent, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !sent) {
      ++d;
      continue;
    }
    const KvJob::Receive& r = a.job.receives[d->receive];
    if (rc == MPI_SUCCESS) {
      rc = MPI_Irecv(r.into, bytes_count(r.bytes), MPI_BYTE, r.process, reply_tag(r.request), world_,
                     &a.requests[d->receive]);
    }
    if (rc != MPI_SUCCESS) a.error = kv_error("a request failed: " + mpi_runtime::mpi_error_text(rc));
    d = a.deferred.erase(d);
  }
}

void KvNode::poll_jobs() {
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    post_deferred_receives(*it);
    int flag = 0;
    const int rc = MPI_Testall(static_cast<int>(it->requests.size()), it->requests.data(), &flag,
                               MPI_STATUSES_IGNORE);
    if (rc != MPI_SUCCESS && !it->error) {
      it->error = kv_error("a request failed: " + mpi_runtime::mpi_error_text(rc));
      flag = 1;
    }
    // A failed job still waits for its local pushes' reads (its memory is
    // the program's), not for replies that will not come.
    if (flag && (it->deferred.empty() || it->error) && (it->awaited == 0 || it->error) && it->local_reads == 0 &&
        (it->local_receives == 0 || it->error)) {
      auto done = it++;
      end_job(done);
    } else {
      ++it;
    }
  }
}

void KvNode::end_job(std::list<ActiveJob>::iterator it) {
  if (it->local_receives > 0) revoke_local_receives(*it);
  for (const KvJob::Receive& r : it->job.receives) watched_.erase(r.request);
  for (std::uint64_t request : it->job.acknowledged) watched_.erase(request);
  for (const KvJob::Message& m : it->job.messages) {
    if (m.process == layout_.rank && m.header.kind == kv_wire::Kind::push) watched_.erase(m.header.request);
  }
  const std::exception_ptr error = it->error;
  KvJob job = std::move(it->job);
  jobs_.erase(it);
  job.done(error);
}

void KvNode::poll_sends() {
  for (auto it = value_sends_.begin(); it != value_sends_.end();) {
    int flag = 0;
    const int rc = MPI_Test(&it->mpi, &flag, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !flag) {
      ++it;
      continue;
    }
    it->done(rc == MPI_SUCCESS ? nullptr : kv_error("a reply failed: " + mpi_runtime::mpi_error_text(rc)));
    it = value_sends_.erase(it);
  }
  for (auto it = status_sends_.begin(); it != status_sends_.end();) {
    int flag = 0;
    const int rc = MPI_Test(&it->mpi, &flag, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && !flag) ++it;
    else it = status_sends_.erase(it);
  }
}

void KvNode::poll_barrier() {
  if (!barrier_) return;
  int flag = 0;
  const int rc = MPI_Test(&barrier_->first, &flag, MPI_STATUS_IGNORE);
  if (rc != MPI_SUCCESS) {
    barrier_->second.set_exception(kv_error("the barrier failed: " + mpi_runtime::mpi_error_text(rc)));
    barrier_.reset();
  } else if (flag) {
    barrier_->second.set_value();
    barrier_.reset();
    std::lock_guard lock(mutex_);
    if (!inbox_.barriers.empty()) news_ = true;
  }
}

// A request that waits longer than the timeout means a peer is gone, hangs,
// or never sent what this one waits for.
void KvNode::check_deadlines() {
  const auto now = Clock::now();
  const auto limit = std::chrono::duration<double>(timeout_);
  std::string late;
  for (const ActiveJob& a : jobs_) {
    if (now - a.started > limit) late = "a request to the servers";
  }
  for (const ValueSend& v : value_sends_) {
    if (now - v.started > limit) late = "a reply to worker process " + std::to_string(v.process);
  }
  for (const StatusSend& s : status_sends_) {
    if (now - s.started > limit) late = "a status to worker process " + std::to_string(s.process);
  }
  for (const PendingPayload& p : payloads_) {
    if (!p.deferred && now - p.started > limit) late = "a push from worker process " + std::to_string(p.source);
  }
  if (barrier_ && now - barrier_started_ > limit) late = "a barrier";
  if (late.empty()) return;
  break_node(late + " waited more than " + seconds_text(timeout_) +
             " s (DEPENGINE_COMM_TIMEOUT): a peer died, hangs, or did not take part; the store is broken");
}

// Fails everything pending; requests in flight are abandoned, and so are
// the communicators (a peer may never complete them).
void KvNode::break_node(const std::string& why) {
  const std::exception_ptr error = kv_error(why);
  {
    std::lock_guard lock(mutex_);
    if (broken_) return;
    broken_ = error;
  }
  mpi_runtime::mark_broken();
  if (shard_) shard_->release_held_pushes();
  // A job whose local pushes are still being read stays until they are
  // (the shard's engine reads the program's memory); its MPI requests are
  // abandoned like the others'.
  std::list<ActiveJob> jobs;
  jobs.swap(jobs_);
  for (ActiveJob& a : jobs) {
    revoke_local_receives(a);
    a.local_receives = 0;
    // A peer that is alive may still send: its replies must not land in
    // memory the program gets back.
    for (std::size_t i = 0; i < a.job.receives.size() && i < a.requests.size(); ++i) {
      if (a.requests[i] != MPI_REQUEST_NULL) MPI_Cancel(&a.requests[i]);
    }
    a.requests.clear();
    if (!a.error) a.error = error;
  }
  for (auto it = jobs.begin(); it != jobs.end();) {
    auto next = std::next(it);
    if (it->local_reads > 0) jobs_.splice(jobs_.end(), jobs, it);
    it = next;
  }
  for (auto it = watched_.begin(); it != watched_.end();) {
    const bool kept = std::any_of(jobs_.begin(), jobs_.end(), [&](const ActiveJob& a) { return &a == it->second; });
    it = kept ? std::next(it) : watched_.erase(it);
  }
  for (ActiveJob& a : jobs) a.job.done(error);
  for (ValueSend& v : value_sends_) v.done(error);
  value_sends_.clear();
  status_sends_.clear();
  for (PendingPayload& p : payloads_) {
    if (p.request == MPI_REQUEST_NULL) continue;
    MPI_Cancel(&p.request);
    abandoned_.push_back(std::move(p.into));  // a cancel may come too late
  }
  payloads_.clear();
  if (barrier_) barrier_->second.set_exception(error);
  barrier_.reset();
  header_recv_ = MPI_REQUEST_NULL;
  status_recv_ = MPI_REQUEST_NULL;
  Inbox in;
  {
    std::lock_guard lock(mutex_);
    std::swap(in, inbox_);
  }
  take_inbox(in);
}

// A process hosting a shard may go once every worker is done and every
// reply is out; or when the node broke; or when a worker that did not
// finish went silent for the timeout (it died or hangs: the node breaks).
void KvNode::update_released() {
  bool finishing = false;
  {
    std::lock_guard lock(mutex_);
    finishing = finishing_ && !released_;
  }
  if (!finishing) return;
  bool release = broken_ != nullptr || !shard_;
  if (shard_ && !release) {
    release = shard_->finished_workers() >= layout_.workers() && shard_->replies_pending() == 0 && !busy();
    const std::string silent = release ? std::string() : silent_workers();
    if (!silent.empty()) {
      const std::string why = "worker process(es) " + silent + " neither finished nor sent anything for " +
                              seconds_text(timeout_) +
                              " s (DEPENGINE_COMM_TIMEOUT): they died or hang; the shard stops serving";
      // A dedicated server's create() throws it; a worker's store is being dropped.
      if (layout_.is_worker()) std::fprintf(stderr, "depengine::KVStore: %s\n", why.c_str());
      break_node(why);
      release = true;
    }
  }
  if (!release) return;
  std::lock_guard lock(mutex_);
  released_ = true;
  released_cv_.notify_all();
}

}  // namespace depengine::detail
