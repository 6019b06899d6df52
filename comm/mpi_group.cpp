// MpiGroup: the processes of MPI_COMM_WORLD, and the progress thread that
// starts their exchanges in number order.
//
// Exchanges go to MPI in *buckets*: runs of consecutive exchanges, one or
// more. Before each bucket, the processes agree on it in a metadata step on
// `control_` (a duplicate of MPI_COMM_WORLD): each proposes the longest run
// from the bucket's first number that is ready here and fusable (small
// allreduces of one dtype, within the bucket size), with the signature of
// each member; a user-defined reduction keeps the shortest proposal, checks
// that the signatures agree, and ANDs one "inputs healthy" bit per process.
// Every process so computes the same bucket and the same verdict, and then
// starts the bucket on `data_` — in place for one exchange, through a packed
// buffer for several. Buckets follow one another in number order on both
// communicators, so every process issues the same collectives in the same
// order; while a bucket travels, the exchanges that become ready gather into
// the next one.
//
// Allreduce buckets of at least kRingAboveBytes go around a ring of
// point-to-point messages on `ring_` instead (reduce-scatter, then
// allgather, over one chunk per process): Open MPI's MPI_Iallreduce reaches
// less than half the bandwidth of its blocking MPI_Allreduce on large
// buffers, the ring about all of it (docs/distributed.md). The ring works
// on the members' own buffers, unpacked: a chunk that spans several members
// goes as one message of an MPI datatype of their pieces, which saves
// copying every fused byte in and out of a packed buffer.
//
// The thread sleeps on a condition variable while nothing is in flight
// (after a short spin, so back-to-back collectives do not pay a wake-up).
// While a request is in flight it polls MPI_Test, yielding between polls:
// Open MPI advances nonblocking collectives only inside MPI calls, so a
// sleeping poller would stall the transfer.

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/host_math.h"
#include "comm/mpi_runtime.h"
#include "comm/process_group.h"

namespace depengine::detail {

namespace {

using Clock = std::chrono::steady_clock;

// The most exchanges one bucket holds (the metadata message carries a
// signature for each).
constexpr int kMaxMembers = 128;
// Allreduces of at least this size go around the point-to-point ring.
constexpr std::size_t kRingAboveBytes = std::size_t{16} << 10;
// The most bytes of one message of the ring: a step's chunk goes in
// segments of this size, one after the other, so that each received
// segment is added while it is still in the cache.
constexpr std::size_t kRingSegmentBytes = std::size_t{1} << 20;
// How long the idle progress thread looks for new work before it sleeps.
constexpr auto kSpinBeforeSleep = std::chrono::microseconds(50);
// Signatures are made non-zero (0: "not proposed") and never all ones
// (the mark of a disagreement).
constexpr std::uint64_t kConflict = ~std::uint64_t{0};

std::uint64_t normalised(std::uint64_t signature) { return (signature & (kConflict >> 1)) | 1; }

using mpi_runtime::mpi_error_text;

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) {
    throw std::runtime_error(std::string("depengine::Communicator: ") + call + " failed: " + mpi_error_text(code));
  }
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::float16:
    case DType::bfloat16: return MPI_UINT16_T;
  }
  return MPI_BYTE;
}

std::string describe_exchange(const Exchange& e) {
  return std::string(exchange_kind_name(e.kind)) + " (call " + std::to_string(e.call) + ")";
}

std::exception_ptr comm_error(const Exchange& e, const std::string& what) {
  return std::make_exception_ptr(std::runtime_error("depengine::Communicator: " + describe_exchange(e) + ": " + what));
}

// The smallest allreduces travel inside their metadata message: each
// process puts the data of the proposal's first members there (end to end,
// as many as fit), the reduction sums what every process put, and a bucket
// whose verdict is good and whose sum came back whole needs no data step:
// one collective instead of two, most of an 8-byte allreduce's latency.
constexpr std::size_t kInlineBytes = 256;

// The metadata step's message; MPI reduces it with `combine_metadata`.
struct Metadata {
  std::uint64_t end;      // one past the last member proposed: the minimum wins
  std::uint64_t healthy;  // ANDed; a cleared bit (rank % 64) marks failed inputs
  std::uint64_t inline_bytes;  // of the members' data in `inline_data` (0: none): the minimum wins
  std::uint64_t inline_dtype;  // a DType: float32 or float64
  std::uint64_t signatures[kMaxMembers];  // 0 where not proposed
  std::uint64_t inline_data[kInlineBytes / sizeof(std::uint64_t)];
};
constexpr int kMetadataWords = sizeof(Metadata) / sizeof(std::uint64_t);

bool inlinable(DType t) { return t == DType::float32 || t == DType::float64; }

void combine_metadata(void* in, void* inout, int* count, MPI_Datatype*) {
  const auto* a = static_cast<const Metadata*>(in);
  auto* b = static_cast<Metadata*>(inout);
  for (int k = 0; k < *count; ++k) {
    b[k].end = std::min(a[k].end, b[k].end);
    b[k].healthy &= a[k].healthy;
    for (int i = 0; i < kMaxMembers; ++i) {
      const std::uint64_t x = a[k].signatures[i], y = b[k].signatures[i];
      b[k].signatures[i] = x == 0 ? y : y == 0 ? x : x == y ? x : kConflict;
    }
    const std::uint64_t bytes = a[k].inline_dtype == b[k].inline_dtype ? std::min(a[k].inline_bytes, b[k].inline_bytes) : 0;
    b[k].inline_bytes = bytes;
    if (bytes == 0) continue;
    const auto dtype = static_cast<DType>(b[k].inline_dtype);
    host_math::add(dtype, b[k].inline_data, a[k].inline_data, 0, static_cast<std::int64_t>(bytes / dtype_size(dtype)));
  }
}

struct Waiting {
  Exchange exchange;
  std::optional<ExchangeDone> done;  // empty when skipped: its inputs failed here
};

std::size_t bytes_of(const std::vector<Waiting>& members) {
  std::size_t bytes = 0;
  for (const Waiting& w : members) bytes += w.exchange.bytes();
  return bytes;
}

struct Arrival {
  std::uint64_t number = 0;
  Waiting waiting;
};

struct MetaInFlight {
  std::uint64_t first = 0;
  Metadata sent{}, received{};
  MPI_Request request = MPI_REQUEST_NULL;
  Clock::time_point started;
};

// One member's data on the ring: `count` elements from `data`, the
// elements [first, first + count) of the bucket.
struct RingSegment {
  char* data;
  std::int64_t first, count;
};

struct BucketInFlight {
  std::vector<Waiting> members;
  std::vector<std::byte> packed;  // several members, not on the ring: their data, end to end
  MPI_Request request = MPI_REQUEST_NULL;
  Clock::time_point started;
  // Around the ring: the members' data, one after the other, as one buffer
  // of `ring_count` elements (not packed: a chunk that spans several members
  // travels as an MPI datatype of their pieces), the step under way (of
  // 2 (P - 1)), its receive and send and the datatypes they use, where
  // reduce-scatter steps receive, and the tags of its messages.
  bool ring = false;
  std::vector<RingSegment> ring_segments;
  std::int64_t ring_count = 0;
  DType ring_dtype = DType::float32;
  int step = 0;
  int segments = 1;  // per chunk: a step is `segments` messages each way
  MPI_Request ring_requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
  MPI_Datatype ring_types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  std::vector<std::byte> scratch;
  int tag_base = 0;
  // allgather and reduce_scatter by process counts: each process's elements
  // and where they begin, alive until MPI is done.
  std::vector<int> counts, displacements;
};

class MpiGroup final : public ProcessGroup {
 public:
  explicit MpiGroup(const CommOptions& options) : options_(options), timeout_(mpi_runtime::timeout_seconds()) {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &data_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &control_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &ring_), "MPI_Comm_dup");
    for (MPI_Comm c : {data_, control_, ring_}) {
      check_mpi(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    }
    int* tag_upper_bound = nullptr;
    int has_bound = 0;
    MPI_Comm_get_attr(ring_, MPI_TAG_UB, &tag_upper_bound, &has_bound);
    tag_limit_ = has_bound ? *tag_upper_bound : 32767;
    check_mpi(MPI_Type_contiguous(kMetadataWords, MPI_UINT64_T, &metadata_type_), "MPI_Type_contiguous");
    check_mpi(MPI_Type_commit(&metadata_type_), "MPI_Type_commit");
    check_mpi(MPI_Op_create(&combine_metadata, /*commute=*/1, &metadata_op_), "MPI_Op_create");
    MPI_Comm_rank(data_, &rank_);
    MPI_Comm_size(data_, &size_);
    version_ = mpi_runtime::library_version();
    mpi_runtime::group_opened();
    thread_ = std::thread([this] { run(); });
  }

  ~MpiGroup() override {
    {
      std::unique_lock lock(mutex_);
      // Every exchange numbered at push ends, completed or failed.
      drained_.wait(lock, [this] { return ended_ == reserved_; });
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
    if (!broken_) {
      MPI_Op_free(&metadata_op_);
      MPI_Type_free(&metadata_type_);
      MPI_Comm_free(&data_);
      MPI_Comm_free(&control_);
      MPI_Comm_free(&ring_);
    }
    mpi_runtime::group_closed();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "MPI (" + version_ + "): process " + std::to_string(rank_) + " of " + std::to_string(size_);
  }

  CommStats stats() const override {
    return {exchanges_started_.load(std::memory_order_relaxed), buckets_started_.load(std::memory_order_relaxed),
            inline_buckets_.load(std::memory_order_relaxed)};
  }

  std::uint64_t reserve(std::uint64_t count) override {
    std::lock_guard lock(mutex_);
    const std::uint64_t first = reserved_;
    reserved_ += count;
    return first;
  }

  void start(std::uint64_t number, const Exchange& exchange, ExchangeDone done) override {
    arrive({number, {exchange, std::move(done)}});
  }

  void skip(std::uint64_t number, const Exchange& exchange) override { arrive({number, {exchange, std::nullopt}}); }

 private:
  // Never ends the exchange on the calling thread (the hand-off executor
  // calls this inside the engine's dispatch): a broken group fails it on
  // the progress thread.
  void arrive(Arrival a) {
    std::lock_guard lock(mutex_);
    inbox_.push_back(std::move(a));
    has_news_.store(true, std::memory_order_release);
    wake_.notify_one();
  }

  void mark_ended(std::uint64_t n) {
    if (n == 0) return;
    std::lock_guard lock(mutex_);
    ended_ += n;
    if (ended_ == reserved_) drained_.notify_all();
  }

  void run() {
    while (take_news()) {
      if (!meta_) propose_bucket();
      if (meta_) test_metadata();
      test_buckets();
      if (check_deadline()) continue;
      if (meta_ || !buckets_.empty()) std::this_thread::yield();
    }
  }

  // Moves new arrivals to `waiting_`. With nothing in flight, and nothing
  // to propose, spins briefly, then sleeps until news. False once the group
  // is stopping and nothing is left.
  bool take_news() {
    const bool idle = !meta_ && buckets_.empty() && !waiting_.contains(next_bucket_);
    if (idle) {
      const auto spin_until = Clock::now() + kSpinBeforeSleep;
      while (!has_news_.load(std::memory_order_acquire) && Clock::now() < spin_until) std::this_thread::yield();
    }
    std::unique_lock lock(mutex_);
    if (idle) {
      wake_.wait(lock, [this] { return has_news_.load(std::memory_order_relaxed) || stop_; });
      if (!has_news_.load(std::memory_order_relaxed) && stop_) return false;
    }
    if (has_news_.load(std::memory_order_relaxed)) {
      std::vector<Arrival> arrivals;
      arrivals.swap(inbox_);
      has_news_.store(false, std::memory_order_relaxed);
      const std::exception_ptr broken = broken_;
      lock.unlock();
      if (broken) {
        // A broken group fails at once what arrives.
        std::vector<Waiting> failed;
        for (Arrival& a : arrivals) failed.push_back(std::move(a.waiting));
        fail_members(failed, broken);
      } else {
        for (Arrival& a : arrivals) waiting_.emplace(a.number, std::move(a.waiting));
      }
    }
    return true;
  }

  bool fusable(const Waiting& w) const {
    return w.done && w.exchange.kind == Exchange::Kind::allreduce && w.exchange.bytes() <= options_.fuse_below_bytes;
  }

  // Starts the metadata step of the bucket that begins at `next_bucket_`,
  // if that exchange is here.
  void propose_bucket() {
    const std::uint64_t first = next_bucket_;
    auto it = waiting_.find(first);
    if (it == waiting_.end()) return;
    const Waiting& head = it->second;
    std::uint64_t end = first + 1;
    if (fusable(head)) {
      std::size_t bytes = head.exchange.bytes();
      for (auto next = std::next(it); next != waiting_.end() && next->first == end && end - first < kMaxMembers;
           ++next, ++end) {
        const Waiting& w = next->second;
        if (!fusable(w) || w.exchange.dtype != head.exchange.dtype ||
            bytes + w.exchange.bytes() > options_.bucket_bytes) {
          break;
        }
        bytes += w.exchange.bytes();
      }
    }
    meta_.emplace();
    MetaInFlight& m = *meta_;
    m.first = first;
    m.started = Clock::now();
    m.sent.end = end;
    m.sent.healthy = head.done ? ~std::uint64_t{0} : ~(std::uint64_t{1} << (rank_ % 64));
    for (std::uint64_t k = first; k < end; ++k) {
      m.sent.signatures[k - first] = normalised(waiting_.at(k).exchange.signature);
    }
    if (head.done && head.exchange.kind == Exchange::Kind::allreduce && inlinable(head.exchange.dtype)) {
      auto* at = reinterpret_cast<std::byte*>(m.sent.inline_data);
      for (std::uint64_t k = first; k < end; ++k) {
        const Exchange& e = waiting_.at(k).exchange;
        if (m.sent.inline_bytes + e.bytes() > kInlineBytes) break;
        if (e.bytes() > 0) std::memcpy(at + m.sent.inline_bytes, e.data, e.bytes());
        m.sent.inline_bytes += e.bytes();
      }
      m.sent.inline_dtype = static_cast<std::uint64_t>(head.exchange.dtype);
    }
    const int rc = MPI_Iallreduce(&m.sent, &m.received, 1, metadata_type_, metadata_op_, control_, &m.request);
    if (rc != MPI_SUCCESS) {
      break_group(comm_error(head.exchange, "MPI_Iallreduce of its metadata failed: " + mpi_error_text(rc)));
    }
  }

  void test_metadata() {
    MetaInFlight& m = *meta_;
    int flag = 0;
    const int rc = MPI_Test(&m.request, &flag, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
      return break_group(comm_error(waiting_.at(m.first).exchange, "MPI_Test failed: " + mpi_error_text(rc)));
    }
    if (!flag) return;
    const std::uint64_t end = m.received.end;
    // `end` is the shortest proposal, so every member is here.
    std::vector<Waiting> members;
    for (std::uint64_t k = m.first; k < end; ++k) {
      auto it = waiting_.find(k);
      members.push_back(std::move(it->second));
      waiting_.erase(it);
    }
    next_bucket_ = end;
    const std::exception_ptr verdict = verdict_of(m.received, members);
    if (verdict) {
      meta_.reset();
      return fail_members(members, verdict);
    }
    if (!finish_inline(m.received, members)) start_bucket(std::move(members));
    meta_.reset();
  }

  // The bucket's sum came with its metadata (kInlineBytes): its members
  // end here. False when it did not (it needs its data step).
  bool finish_inline(const Metadata& received, std::vector<Waiting>& members) {
    const Exchange& head = members.front().exchange;
    if (head.kind != Exchange::Kind::allreduce || received.inline_bytes < bytes_of(members) ||
        received.inline_dtype != static_cast<std::uint64_t>(head.dtype)) {
      return false;
    }
    exchanges_started_.fetch_add(members.size(), std::memory_order_relaxed);
    buckets_started_.fetch_add(1, std::memory_order_relaxed);
    inline_buckets_.fetch_add(1, std::memory_order_relaxed);
    complete_members(members, reinterpret_cast<const std::byte*>(received.inline_data));
    return true;
  }

  // The members succeeded; `packed`, when given, holds their results end to
  // end, to be copied into each.
  void complete_members(std::vector<Waiting>& members, const std::byte* packed) {
    for (Waiting& w : members) {
      if (packed != nullptr && w.exchange.bytes() > 0) std::memcpy(w.exchange.data, packed, w.exchange.bytes());
      if (packed != nullptr) packed += w.exchange.bytes();
      (*w.done)(nullptr);
    }
    mark_ended(members.size());
  }

  std::exception_ptr verdict_of(const Metadata& received, const std::vector<Waiting>& members) const {
    const Exchange& head = members.front().exchange;
    for (std::size_t i = 0; i < members.size(); ++i) {
      if (received.signatures[i] == kConflict) {
        return comm_error(members[i].exchange,
                          "the processes disagree on this collective (its kind, dtype, element count, number "
                          "of ranks its shapes give, reduce op or root differ): the tensors differ between "
                          "processes, or the processes pushed their collectives in different orders");
      }
    }
    const std::uint64_t failed = ~received.healthy;
    if (failed != 0) {
      std::string who;
      for (int r = 0; r < std::min(size_, 64); ++r) {
        if (failed & (std::uint64_t{1} << r)) who += (who.empty() ? "" : ", ") + std::to_string(r);
      }
      return comm_error(head, "an input failed on process " + who + " (that process reports the error itself)");
    }
    return nullptr;
  }

  void fail_members(std::vector<Waiting>& members, std::exception_ptr error) {
    for (Waiting& w : members) {
      if (w.done) (*w.done)(error);
    }
    mark_ended(members.size());
  }

  void start_bucket(std::vector<Waiting> members) {
    BucketInFlight b;
    b.started = Clock::now();
    const Exchange& head = members.front().exchange;
    const std::size_t bytes = bytes_of(members);
    const bool ring = head.kind == Exchange::Kind::allreduce && bytes >= kRingAboveBytes;
    // Off the ring, several members travel packed end to end in one buffer.
    void* data = head.data;
    if (members.size() > 1 && !ring) {
      b.packed.resize(bytes);
      std::size_t at = 0;
      for (const Waiting& w : members) {
        if (w.exchange.bytes()) std::memcpy(b.packed.data() + at, w.exchange.data, w.exchange.bytes());
        at += w.exchange.bytes();
      }
      data = b.packed.data();
    }
    int rc;
    if (ring) {
      b.ring = true;
      b.ring_dtype = head.dtype;
      for (const Waiting& w : members) {
        if (w.exchange.count > 0) {
          b.ring_segments.push_back({static_cast<char*>(w.exchange.data), b.ring_count, w.exchange.count});
        }
        b.ring_count += w.exchange.count;
      }
      const std::size_t chunk_elements = static_cast<std::size_t>(b.ring_count) / static_cast<std::size_t>(size_) + 1;
      b.segments = static_cast<int>((chunk_elements * dtype_size(head.dtype) + kRingSegmentBytes - 1) /
                                    kRingSegmentBytes);
      b.scratch.resize((chunk_elements / static_cast<std::size_t>(b.segments) + 1) * dtype_size(head.dtype));
      // Unique among the rings in flight: they start in the same order everywhere.
      const int per_ring = 2 * size_ * b.segments;
      b.tag_base = static_cast<int>(rings_started_++ % static_cast<std::uint64_t>(tag_limit_ / per_ring)) * per_ring;
      rc = post_ring_step(b);
    } else if (members.size() == 1) {
      rc = issue(head, b);
    } else {
      rc = MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(bytes / dtype_size(head.dtype)), mpi_type(head.dtype),
                          MPI_SUM, data_, &b.request);
    }
    if (rc != MPI_SUCCESS) {
      free_ring_types(b);
      return fail_members(members, comm_error(head, "MPI failed to start it: " + mpi_error_text(rc)));
    }
    exchanges_started_.fetch_add(members.size(), std::memory_order_relaxed);
    buckets_started_.fetch_add(1, std::memory_order_relaxed);
    b.members = std::move(members);
    buckets_.push_back(std::move(b));
  }

  int issue(const Exchange& e, BucketInFlight& b) {
    const int count = static_cast<int>(e.count);
    const MPI_Datatype type = mpi_type(e.dtype);
    MPI_Request& request = b.request;
    if (e.process_counts != nullptr) {
      // The communicator checked that these fit MPI's int counts.
      int at = 0;
      for (int q = 0; q < size_; ++q) {
        b.counts.push_back(e.process_counts[q] * count);
        b.displacements.push_back(at);
        at += b.counts.back();
      }
    }
    switch (e.kind) {
      case Exchange::Kind::allreduce:
        return MPI_Iallreduce(MPI_IN_PLACE, e.data, count, type, MPI_SUM, data_, &request);
      case Exchange::Kind::broadcast:
        return MPI_Ibcast(e.data, count, type, e.root, data_, &request);
      case Exchange::Kind::allgather:
        if (e.process_counts != nullptr) {
          return MPI_Iallgatherv(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, e.data, b.counts.data(), b.displacements.data(),
                                 type, data_, &request);
        }
        return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, e.data, count, type, data_, &request);
      case Exchange::Kind::reduce_scatter:
        return MPI_Ireduce_scatter(e.input, e.data, b.counts.data(), type, MPI_SUM, data_, &request);
      case Exchange::Kind::barrier:
        return MPI_Ibarrier(data_, &request);
    }
    return MPI_ERR_OTHER;
  }

  // Chunk c of the ring: elements [c n / P, (c + 1) n / P).
  std::int64_t chunk_begin(const BucketInFlight& b, int c) const {
    return static_cast<std::int64_t>(c) * b.ring_count / size_;
  }

  // Segment g of chunk c: [begin, end).
  std::pair<std::int64_t, std::int64_t> segment_of(const BucketInFlight& b, int c, int g) const {
    const std::int64_t first = chunk_begin(b, c), length = chunk_begin(b, c + 1) - first;
    return {first + g * length / b.segments, first + (g + 1) * length / b.segments};
  }

  // Elements [begin, end) of a ring bucket as the buffer, count and
  // datatype of one message: the member's data where they lie in one
  // member, else an MPI datatype of the pieces in each (absolute addresses
  // from MPI_BOTTOM), kept in `type` until the message is done.
  struct Span {
    void* data;
    int count;
    MPI_Datatype type;
  };
  Span span_of(const BucketInFlight& b, std::int64_t begin, std::int64_t end, MPI_Datatype& type) const {
    const MPI_Datatype element = mpi_type(b.ring_dtype);
    const auto size = static_cast<std::int64_t>(dtype_size(b.ring_dtype));
    std::vector<int> lengths;
    std::vector<MPI_Aint> addresses;
    char* only = nullptr;
    for (const RingSegment& g : b.ring_segments) {
      const std::int64_t from = std::max(begin, g.first), to = std::min(end, g.first + g.count);
      if (from >= to) continue;
      only = g.data + (from - g.first) * size;
      MPI_Aint address = 0;
      MPI_Get_address(only, &address);
      lengths.push_back(static_cast<int>(to - from));
      addresses.push_back(address);
    }
    if (lengths.size() <= 1) return {only, lengths.empty() ? 0 : lengths[0], element};
    MPI_Type_create_hindexed(static_cast<int>(lengths.size()), lengths.data(), addresses.data(), element, &type);
    MPI_Type_commit(&type);
    return {MPI_BOTTOM, 1, type};
  }

  // Calls f(data, first, count) for the pieces of elements [begin, end)
  // that lie in each member: `first` counts from `begin`.
  template <class F>
  void for_each_piece(const BucketInFlight& b, std::int64_t begin, std::int64_t end, F&& f) const {
    const auto size = static_cast<std::int64_t>(dtype_size(b.ring_dtype));
    for (const RingSegment& g : b.ring_segments) {
      const std::int64_t from = std::max(begin, g.first), to = std::min(end, g.first + g.count);
      if (from < to) f(g.data + (from - g.first) * size, from - begin, to - from);
    }
  }

  void free_ring_types(BucketInFlight& b) {
    for (MPI_Datatype& t : b.ring_types) {
      if (t != MPI_DATATYPE_NULL) MPI_Type_free(&t);
    }
  }

  // Posts segment g of step s = `b.step` / segments, g = `b.step` % segments
  // of the ring: in reduce-scatter step s a process sends chunk (rank - s)
  // to its right and receives chunk (rank - s - 1) from its left, to add
  // into its own; in allgather step s it sends the reduced chunk
  // (rank + 1 - s) and receives chunk (rank - s) in place.
  int post_ring_step(BucketInFlight& b) {
    free_ring_types(b);
    const int p = size_, steps_per_phase = p - 1;
    const int phase_step = b.step / b.segments, g = b.step % b.segments;
    const bool reducing = phase_step < steps_per_phase;
    const int s = reducing ? phase_step : phase_step - steps_per_phase;
    const int send_chunk = (rank_ - s + (reducing ? 0 : 1) + 2 * p) % p;
    const int recv_chunk = (rank_ - s - (reducing ? 1 : 0) + 2 * p) % p;
    const auto [recv_begin, recv_end] = segment_of(b, recv_chunk, g);
    const auto [send_begin, send_end] = segment_of(b, send_chunk, g);
    const Span into = reducing ? Span{b.scratch.data(), static_cast<int>(recv_end - recv_begin), mpi_type(b.ring_dtype)}
                               : span_of(b, recv_begin, recv_end, b.ring_types[0]);
    const Span from = span_of(b, send_begin, send_end, b.ring_types[1]);
    const int tag = b.tag_base + b.step;
    int rc = MPI_Irecv(into.data, into.count, into.type, (rank_ - 1 + p) % p, tag, ring_, &b.ring_requests[0]);
    if (rc == MPI_SUCCESS) {
      rc = MPI_Isend(from.data, from.count, from.type, (rank_ + 1) % p, tag, ring_, &b.ring_requests[1]);
    }
    return rc;
  }

  // Advances a ring bucket as far as its messages allow; `finished` once
  // its last step is done. Returns MPI's error code.
  int advance_ring(BucketInFlight& b, bool& finished) {
    finished = false;
    for (;;) {
      int flag = 0;
      const int rc = MPI_Testall(2, b.ring_requests, &flag, MPI_STATUSES_IGNORE);
      if (rc != MPI_SUCCESS || !flag) return rc;
      const int steps_per_phase = size_ - 1;
      const int phase_step = b.step / b.segments;
      if (phase_step < steps_per_phase) {
        const int chunk = (rank_ - phase_step - 1 + 2 * size_) % size_;
        const auto [begin, end] = segment_of(b, chunk, b.step % b.segments);
        const std::byte* received = b.scratch.data();
        const auto size = static_cast<std::int64_t>(dtype_size(b.ring_dtype));
        for_each_piece(b, begin, end, [&](char* into, std::int64_t first, std::int64_t count) {
          host_math::add(b.ring_dtype, into, received + first * size, 0, count);
        });
      }
      if (++b.step == 2 * steps_per_phase * b.segments) {
        free_ring_types(b);
        finished = true;
        return MPI_SUCCESS;
      }
      const int posted = post_ring_step(b);
      if (posted != MPI_SUCCESS) return posted;
    }
  }

  void test_buckets() {
    for (auto it = buckets_.begin(); it != buckets_.end();) {
      int flag = 0;
      bool finished = false;
      const int rc = it->ring ? advance_ring(*it, finished) : MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE);
      flag = flag || finished;
      if (rc == MPI_SUCCESS && !flag) {
        ++it;
        continue;
      }
      if (rc != MPI_SUCCESS) {
        fail_members(it->members, comm_error(it->members.front().exchange, "failed: " + mpi_error_text(rc)));
      } else {
        complete_members(it->members, it->packed.empty() ? nullptr : it->packed.data());
      }
      free_ring_types(*it);
      it = buckets_.erase(it);
    }
  }

  // The watchdog: a bucket whose exchanges are ready here and that waits
  // for the other processes longer than the timeout breaks the group.
  bool check_deadline() {
    const auto now = Clock::now();
    const auto limit = std::chrono::duration<double>(timeout_);
    const Exchange* late = nullptr;
    for (const BucketInFlight& b : buckets_) {
      if (now - b.started > limit) late = &b.members.front().exchange;
    }
    if (meta_ && now - meta_->started > limit) late = &waiting_.at(meta_->first).exchange;
    if (late == nullptr) return false;
    break_group(comm_error(*late, "waited more than " + seconds_text(timeout_) +
                                      " s (DEPENGINE_COMM_TIMEOUT) for the other processes: a peer died, hangs, "
                                      "or did not push this collective; the communicator is broken"));
    return true;
  }

  // Fails everything pending; the requests in flight are abandoned (MPI
  // cannot cancel a collective), and so are the communicators.
  void break_group(std::exception_ptr error) {
    {
      std::lock_guard lock(mutex_);
      broken_ = error;
    }
    mpi_runtime::mark_broken();
    for (BucketInFlight& b : buckets_) fail_members(b.members, error);
    buckets_.clear();
    meta_.reset();
    std::vector<Waiting> pending;
    for (auto& [number, w] : waiting_) pending.push_back(std::move(w));
    waiting_.clear();
    // Arrivals that raced with us; later ones fail in arrive().
    {
      std::lock_guard lock(mutex_);
      for (Arrival& a : inbox_) pending.push_back(std::move(a.waiting));
      inbox_.clear();
      has_news_.store(false, std::memory_order_relaxed);
    }
    fail_members(pending, error);
  }

  const CommOptions options_;
  const double timeout_;
  MPI_Comm data_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL, ring_ = MPI_COMM_NULL;
  int tag_limit_ = 32767;
  MPI_Datatype metadata_type_ = MPI_DATATYPE_NULL;
  MPI_Op metadata_op_ = MPI_OP_NULL;
  int rank_ = 0, size_ = 1;
  std::string version_;

  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::vector<Arrival> inbox_;
  std::atomic<bool> has_news_{false};
  bool stop_ = false;
  std::exception_ptr broken_;
  std::uint64_t reserved_ = 0, ended_ = 0;
  std::atomic<std::uint64_t> exchanges_started_{0}, buckets_started_{0}, inline_buckets_{0};

  // The progress thread's own.
  std::map<std::uint64_t, Waiting> waiting_;
  std::uint64_t next_bucket_ = 0;
  // MPI writes into `received` until the request completes: the entry must
  // not move, hence optional and list.
  std::optional<MetaInFlight> meta_;
  std::list<BucketInFlight> buckets_;
  std::uint64_t rings_started_ = 0;

  std::thread thread_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_world_group(const CommOptions& options) {
  std::string why_not;
  if (!mpi_runtime::ensure(why_not)) return make_single_process_group("MPI is built in, but " + why_not);
  return std::make_shared<MpiGroup>(options);
}

}  // namespace depengine::detail
