// MpiGroup: the processes of MPI_COMM_WORLD, and the progress thread that
// starts their exchanges in number order.
//
// Two duplicates of MPI_COMM_WORLD: `control_` carries the metadata step of
// each exchange, `data_` the exchange itself. Both see exchanges in number
// order, so the collectives on each communicator are issued in the same
// order on every process, while the metadata of exchange k+1 may already
// travel as the data of exchange k does.
//
// The thread sleeps on a condition variable while nothing is in flight.
// While a request is in flight it polls MPI_Test, yielding between polls:
// Open MPI advances nonblocking collectives only inside MPI calls, so a
// sleeping poller would stall the transfer. Requests no local work waits
// for (metadata a peer may still need) are polled every 200 µs.

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <condition_variable>
#include <cstdlib>
#include <list>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "comm/mpi_runtime.h"
#include "comm/process_group.h"

namespace depengine::detail {

namespace {

using Clock = std::chrono::steady_clock;

constexpr double kDefaultTimeoutSeconds = 600;
// Metadata steps in flight at once; more wait for their turn.
constexpr std::size_t kMaxMetaInFlight = 64;

double timeout_from_environment() {
  const char* text = std::getenv("DEPENGINE_COMM_TIMEOUT");
  if (text == nullptr || *text == '\0') return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds > 0)) {
    throw std::runtime_error(std::string("depengine::Communicator: DEPENGINE_COMM_TIMEOUT must be a positive "
                                         "number of seconds, not '") + text + "'");
  }
  return seconds;
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<std::size_t>(length));
}

void check_mpi(int code, const char* call) {
  if (code != MPI_SUCCESS) {
    throw std::runtime_error(std::string("depengine::Communicator: ") + call + " failed: " + mpi_error_text(code));
  }
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

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return text;
}

std::string describe_exchange(const Exchange& e) {
  return std::string(exchange_kind_name(e.kind)) + " (call " + std::to_string(e.call) + ")";
}

// What the metadata step compares. Reduced with MPI_BAND: the signature and
// its complement are equal everywhere exactly when their reductions are
// complements; a cleared bit of `healthy` names a process whose inputs failed.
struct Metadata {
  std::uint64_t words[3];
};

Metadata metadata_of(const Exchange& e, bool failed, int rank) {
  const std::uint64_t healthy = failed ? ~(std::uint64_t{1} << (rank % 64)) : ~std::uint64_t{0};
  return {{e.signature, ~e.signature, healthy}};
}

std::exception_ptr verdict_of(const Metadata& m, const Exchange& e, int size) {
  if ((m.words[0] | m.words[1]) != ~std::uint64_t{0}) {
    return std::make_exception_ptr(std::runtime_error(
        "depengine::Communicator: " + describe_exchange(e) +
        ": the processes disagree on this collective (its kind, dtype, element count, number of local "
        "tensors or root differ): the tensors differ between processes, or the processes pushed "
        "their collectives in different orders"));
  }
  const std::uint64_t failed = ~m.words[2];
  if (failed != 0) {
    std::string who;
    for (int r = 0; r < std::min(size, 64); ++r) {
      if (failed & (std::uint64_t{1} << r)) who += (who.empty() ? "" : ", ") + std::to_string(r);
    }
    return std::make_exception_ptr(std::runtime_error(
        "depengine::Communicator: " + describe_exchange(e) + ": an input failed on process " + who +
        " (that process reports the error itself)"));
  }
  return nullptr;
}

struct Arrival {
  std::uint64_t number = 0;
  Exchange exchange;
  std::optional<ExchangeDone> done;  // empty when skipped
};

struct Waiting {
  Exchange exchange;
  std::optional<ExchangeDone> done;
  bool judged = false;
  std::exception_ptr verdict;
  Clock::time_point arrived{};
};

struct MetaInFlight {
  std::uint64_t number;
  Metadata sent, received;
  MPI_Request request;
  Clock::time_point started;
};

struct DataInFlight {
  Exchange exchange;
  ExchangeDone done;
  MPI_Request request;
  Clock::time_point started;
};

class MpiGroup final : public ProcessGroup {
 public:
  MpiGroup() : timeout_(timeout_from_environment()) {
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &data_), "MPI_Comm_dup");
    check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &control_), "MPI_Comm_dup");
    for (MPI_Comm c : {data_, control_}) check_mpi(MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
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
      MPI_Comm_free(&data_);
      MPI_Comm_free(&control_);
    }
    mpi_runtime::group_closed();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "MPI (" + version_ + "): process " + std::to_string(rank_) + " of " + std::to_string(size_);
  }

  std::uint64_t reserve(std::uint64_t count) override {
    std::lock_guard lock(mutex_);
    const std::uint64_t first = reserved_;
    reserved_ += count;
    return first;
  }

  void start(std::uint64_t number, const Exchange& exchange, ExchangeDone done) override {
    arrive({number, exchange, std::move(done)});
  }

  void skip(std::uint64_t number, const Exchange& exchange) override { arrive({number, exchange, std::nullopt}); }

 private:
  void arrive(Arrival a) {
    {
      std::lock_guard lock(mutex_);
      if (!broken_) {
        inbox_.push_back(std::move(a));
        has_news_ = true;
        wake_.notify_one();
        return;
      }
    }
    // A broken group fails at once what arrives.
    if (a.done) (*a.done)(broken_);
    mark_ended(1);
  }

  void mark_ended(std::uint64_t n) {
    std::lock_guard lock(mutex_);
    ended_ += n;
    if (ended_ == reserved_) drained_.notify_all();
  }

  void run() {
    for (;;) {
      if (!take_news()) return;
      issue_metadata();
      const bool local_work_waits = test_metadata();
      issue_data();
      test_data();
      if (check_deadline()) continue;
      if (!data_in_flight_.empty() || local_work_waits) {
        std::this_thread::yield();
      } else if (!metas_.empty()) {
        std::unique_lock lock(mutex_);
        wake_.wait_for(lock, std::chrono::microseconds(200), [this] { return has_news_; });
      }
    }
  }

  // Moves new arrivals to `waiting_`; sleeps while there is nothing to do.
  // False once the group is stopping and nothing is left.
  bool take_news() {
    std::unique_lock lock(mutex_);
    // With nothing in flight, what waits (behind a number not here yet)
    // needs news to move.
    const bool idle = data_in_flight_.empty() && metas_.empty();
    if (idle) {
      wake_.wait(lock, [this] { return has_news_ || stop_; });
      if (!has_news_ && stop_) return false;
    }
    if (has_news_) {
      const auto now = Clock::now();
      for (Arrival& a : inbox_) {
        Waiting w;
        w.exchange = a.exchange;
        w.done = std::move(a.done);
        w.arrived = now;
        waiting_.emplace(a.number, std::move(w));
      }
      inbox_.clear();
      has_news_ = false;
    }
    return true;
  }

  void issue_metadata() {
    while (metas_.size() < kMaxMetaInFlight) {
      auto it = waiting_.find(next_meta_);
      if (it == waiting_.end()) return;
      Waiting& w = it->second;
      metas_.push_back({next_meta_, metadata_of(w.exchange, !w.done, rank_), {}, MPI_REQUEST_NULL, Clock::now()});
      MetaInFlight& m = metas_.back();
      const int rc = MPI_Iallreduce(m.sent.words, m.received.words, 3, MPI_UINT64_T, MPI_BAND, control_, &m.request);
      if (rc != MPI_SUCCESS) {
        w.judged = true;
        w.verdict = std::make_exception_ptr(std::runtime_error(
            "depengine::Communicator: " + describe_exchange(w.exchange) + ": MPI_Iallreduce failed: " +
            mpi_error_text(rc)));
        metas_.pop_back();
      }
      ++next_meta_;
    }
  }

  // Returns whether an exchange that is ready here waits for its metadata.
  bool test_metadata() {
    bool waited_for = false;
    for (auto it = metas_.begin(); it != metas_.end();) {
      int flag = 0;
      const int rc = MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE);
      Waiting& w = waiting_.at(it->number);
      if (rc != MPI_SUCCESS || flag) {
        w.judged = true;
        w.verdict = rc != MPI_SUCCESS
                        ? std::make_exception_ptr(std::runtime_error("depengine::Communicator: " +
                                                                     describe_exchange(w.exchange) +
                                                                     ": MPI_Test failed: " + mpi_error_text(rc)))
                        : verdict_of(it->received, w.exchange, size_);
        it = metas_.erase(it);
      } else {
        waited_for = waited_for || w.done.has_value();
        ++it;
      }
    }
    return waited_for;
  }

  void issue_data() {
    for (;;) {
      auto it = waiting_.find(next_data_);
      if (it == waiting_.end() || !it->second.judged) return;
      Waiting w = std::move(it->second);
      waiting_.erase(it);
      ++next_data_;
      if (w.verdict || !w.done) {
        if (w.done) (*w.done)(w.verdict);
        mark_ended(1);
        continue;
      }
      MPI_Request request = MPI_REQUEST_NULL;
      const int rc = issue(w.exchange, request);
      if (rc != MPI_SUCCESS) {
        (*w.done)(std::make_exception_ptr(std::runtime_error(
            "depengine::Communicator: " + describe_exchange(w.exchange) + ": MPI failed to start it: " +
            mpi_error_text(rc))));
        mark_ended(1);
        continue;
      }
      data_in_flight_.push_back({w.exchange, std::move(*w.done), request, Clock::now()});
    }
  }

  int issue(const Exchange& e, MPI_Request& request) {
    const int count = static_cast<int>(e.count);
    const MPI_Datatype type = mpi_type(e.dtype);
    switch (e.kind) {
      case Exchange::Kind::allreduce:
        return MPI_Iallreduce(MPI_IN_PLACE, e.data, count, type, MPI_SUM, data_, &request);
      case Exchange::Kind::broadcast:
        return MPI_Ibcast(e.data, count, type, e.root, data_, &request);
      case Exchange::Kind::allgather:
        return MPI_Iallgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, e.data, count, type, data_, &request);
      case Exchange::Kind::reduce_scatter:
        return MPI_Ireduce_scatter_block(e.input, e.data, count, type, MPI_SUM, data_, &request);
      case Exchange::Kind::barrier:
        return MPI_Ibarrier(data_, &request);
    }
    return MPI_ERR_OTHER;
  }

  void test_data() {
    std::uint64_t finished = 0;
    for (auto it = data_in_flight_.begin(); it != data_in_flight_.end();) {
      int flag = 0;
      const int rc = MPI_Test(&it->request, &flag, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS && !flag) {
        ++it;
        continue;
      }
      it->done(rc == MPI_SUCCESS ? nullptr
                                 : std::make_exception_ptr(std::runtime_error(
                                       "depengine::Communicator: " + describe_exchange(it->exchange) +
                                       " failed: " + mpi_error_text(rc))));
      it = data_in_flight_.erase(it);
      ++finished;
    }
    if (finished) mark_ended(finished);
  }

  // The watchdog: an exchange that waits for the other processes longer
  // than the timeout breaks the group. True when it did.
  bool check_deadline() {
    const auto now = Clock::now();
    const auto limit = std::chrono::duration<double>(timeout_);
    const Exchange* late = nullptr;
    for (const DataInFlight& d : data_in_flight_) {
      if (now - d.started > limit) late = &d.exchange;
    }
    for (const MetaInFlight& m : metas_) {
      const Waiting& w = waiting_.at(m.number);
      if (w.done && now - w.arrived > limit) late = &w.exchange;
    }
    if (late == nullptr) return false;
    break_group(std::make_exception_ptr(std::runtime_error(
        "depengine::Communicator: " + describe_exchange(*late) + " waited more than " + seconds_text(timeout_) +
        " s (DEPENGINE_COMM_TIMEOUT) for the other processes: a peer died, hangs, or did not push "
        "this collective; the communicator is broken")));
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
    std::uint64_t failed = 0;
    for (DataInFlight& d : data_in_flight_) {
      d.done(error);
      ++failed;
    }
    data_in_flight_.clear();
    metas_.clear();
    for (auto& [number, w] : waiting_) {
      if (w.done) (*w.done)(error);
      ++failed;
    }
    waiting_.clear();
    mark_ended(failed);
    // Later arrivals fail in arrive(); drain the inbox that raced with us.
    std::vector<Arrival> late;
    {
      std::lock_guard lock(mutex_);
      late.swap(inbox_);
      has_news_ = false;
    }
    for (Arrival& a : late) {
      if (a.done) (*a.done)(error);
    }
    mark_ended(late.size());
  }

  const double timeout_;
  MPI_Comm data_ = MPI_COMM_NULL, control_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  std::string version_;

  std::mutex mutex_;
  std::condition_variable wake_, drained_;
  std::vector<Arrival> inbox_;
  bool has_news_ = false;
  bool stop_ = false;
  std::exception_ptr broken_;
  std::uint64_t reserved_ = 0, ended_ = 0;

  // The progress thread's own.
  std::map<std::uint64_t, Waiting> waiting_;
  // A list: MPI writes into `received` until the request completes, so the
  // entries must not move as others are erased.
  std::list<MetaInFlight> metas_;
  std::vector<DataInFlight> data_in_flight_;
  std::uint64_t next_meta_ = 0, next_data_ = 0;

  std::thread thread_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_world_group() {
  std::string why_not;
  if (!mpi_runtime::ensure(why_not)) return make_single_process_group("MPI is built in, but " + why_not);
  return std::make_shared<MpiGroup>();
}

}  // namespace depengine::detail
