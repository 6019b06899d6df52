#pragma once
// KvNode: one process's part in a dist KVStore — its MPI communicators,
// and the progress thread that carries the worker's requests (jobs) to the
// server shards and, when the process hosts a shard, receives the workers'
// messages for it and sends its replies. Only the progress thread calls MPI
// (after the constructor), so MPI sees one thread per store.
//
// The thread polls while anything is in flight, yielding between polls
// (Open MPI advances transfers only inside MPI calls). A process hosting a
// shard must also notice messages nobody announced: it keeps polling for
// a moment after its last message, then sleeps between polls, longer each
// time up to a few milliseconds; a worker with nothing in flight and no
// shard sleeps until it has work.
//
// Every job, reply and barrier has DEPENGINE_COMM_TIMEOUT seconds to end:
// after that the node is broken, everything pending fails, and so does
// whatever comes later. A worker tells the other processes' shards every
// quarter of that time that it is alive, so that a shard waiting for the
// workers to finish knows when one is gone: one that neither finished nor
// said anything for the timeout.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "comm/kv_shard.h"
#include "depengine/engine.h"
#include "comm/kv_wire.h"
#include "depengine/detail/inline_function.h"

namespace depengine::detail {

/// Who is who in a job of `size` processes with `servers` dedicated servers
/// (0: shards in the first `colocated_shards` worker processes).
struct KvLayout {
  int rank = 0, size = 1, servers = 0, colocated_shards = 1;
  int workers() const { return size - servers; }
  int shards() const { return servers > 0 ? servers : colocated_shards; }
  int shard_process(int shard) const { return servers > 0 ? size - servers + shard : shard; }
  bool is_worker() const { return rank < workers(); }
  bool hosts_shard() const { return servers > 0 ? !is_worker() : rank < colocated_shards; }
};

/// A worker's request: messages to shards (a header each, and a payload
/// when the header says so), receives of replies, and the requests whose
/// status it waits for. `done` runs on the progress thread once every
/// message went out, every receive arrived and every status came, or with
/// the first error.
struct KvJob {
  struct Message {
    int process = 0;
    kv_wire::Header header;
    const void* payload = nullptr;
    std::size_t bytes = 0;
  };
  struct Receive {
    int process = 0;
    std::uint64_t request = 0;
    void* into = nullptr;
    std::size_t bytes = 0;
  };
  std::vector<Message> messages;
  std::vector<Receive> receives;
  std::vector<std::uint64_t> acknowledged;
  InlineFunction<void(std::exception_ptr)> done;
};

class KvNode final : public KvReplies {
 public:
  /// Collective over MPI_COMM_WORLD (MPI must be up).
  KvNode(KvLayout layout, bool sync, KVUpdate update);
  /// Stops the thread; call finish() (workers) or serve() (servers) first.
  ~KvNode() override;

  const KvLayout& layout() const { return layout_; }
  /// Numbers `count` requests of this worker; returns the first.
  std::uint64_t new_requests(std::uint64_t count);
  /// From any thread.
  void submit(KvJob job);
  /// Blocks until every worker called it; rethrows a failure.
  void barrier();
  /// The shard's updater (a process hosting one).
  void set_update(KVUpdate update);
  /// A worker whose store is gone: tells every shard, then, hosting one,
  /// serves until every worker is done.
  void finish();
  /// A dedicated server: serves until every worker is done. Throws when
  /// the node broke, or when a worker went silent for the timeout without
  /// finishing (it died or hangs).
  void serve();
  std::string describe() const;

  void send_value(int process, std::uint64_t request, Tensor value, Completion done) override;
  void send_status(int process, std::uint64_t request, std::string error) override;
  void local_push_read(std::uint64_t request) override;
  void local_value_written(std::uint64_t request, Completion done) override;

 private:
  using Clock = std::chrono::steady_clock;
  // A receive into memory that its own request's payload is sent from (a
  // pushpull into the pushed tensor): MPI may not see a send buffer written
  // before the send completes, so it is posted once the send did.
  struct DeferredReceive {
    std::size_t receive = 0;              // in job.receives and requests
    std::size_t send = kNoSend;           // the payload's send in requests
    static constexpr std::size_t kNoSend = ~std::size_t{0};
  };
  struct ActiveJob {
    KvJob job;
    std::vector<MPI_Request> requests;  // the receives, then the messages' sends
    std::vector<DeferredReceive> deferred;
    int awaited = 0;                    // statuses still to come
    int local_reads = 0;                // pushes to this process's shard still reading the job's memory
    int local_receives = 0;             // replies of this process's shard still to be copied
    std::exception_ptr error;
    Clock::time_point started;
  };
  // A receive from this process's own shard: its reply is copied straight
  // into `into` by the reply operation (send_value), not sent through MPI.
  struct LocalReceive {
    void* into = nullptr;
    std::size_t bytes = 0;
    bool copying = false;
  };
  struct PendingPayload {
    MPI_Request request = MPI_REQUEST_NULL;
    int source = 0;
    kv_wire::Header header;
    Tensor into;
    bool deferred = false;  // its receive is not posted yet (post_deferred_payloads)
    Clock::time_point started;
  };
  struct ValueSend {
    int process = 0;
    std::uint64_t request = 0;
    Tensor value;
    Completion done;
    MPI_Request mpi = MPI_REQUEST_NULL;
    Clock::time_point started;
  };
  struct StatusSend {
    int process = 0;
    kv_wire::Status status;
    MPI_Request mpi = MPI_REQUEST_NULL;
    Clock::time_point started;
  };
  struct Inbox {
    std::vector<std::uint64_t> local_reads_done;     // requests of on_local_push
    std::vector<std::uint64_t> local_receives_done;  // requests copied by copy_reply_locally
    std::vector<KvJob> jobs;
    std::vector<ValueSend> values;
    std::vector<StatusSend> statuses;
    std::vector<std::promise<void>> barriers;
  };

  void run();
  bool busy() const;
  void take_inbox(Inbox& in);
  void post_job(KvJob job);
  void post_value(ValueSend send);
  void post_status(StatusSend send);
  void poll_headers();
  bool defers_payload(const PendingPayload& p) const;
  bool post_payload_receive(PendingPayload& p);
  void post_deferred_payloads();
  void poll_statuses();
  void on_status(const kv_wire::Status& s);
  void deliver_locally(ActiveJob& a, const KvJob::Message& m);
  /// `value` null: the shard already wrote it into the receive's memory.
  void copy_reply_locally(std::uint64_t request, const Tensor* value, Completion done);
  void revoke_local_receives(const ActiveJob& a);
  void poll_jobs();
  void post_deferred_receives(ActiveJob& a);
  void poll_sends();
  void poll_barrier();
  void check_deadlines();
  void update_released();
  void send_alive();
  std::chrono::duration<double> alive_interval() const { return std::chrono::duration<double>(timeout_ / 4); }
  /// The workers that neither finished nor said anything for the timeout.
  std::string silent_workers() const;
  void end_job(std::list<ActiveJob>::iterator it);
  void break_node(const std::string& why);
  std::exception_ptr broken_error() const;
  void wait_released();
  int reply_tag(std::uint64_t request) const;

  const KvLayout layout_;
  const bool sync_;
  const double timeout_;
  MPI_Comm world_ = MPI_COMM_NULL, workers_ = MPI_COMM_NULL;
  std::uint64_t reply_tags_ = kv_wire::kReplyTags;
  std::string version_;
  // The shard's work runs on an engine of its own, so that the progress
  // thread never waits for the program's engine (a naive engine runs one
  // push at a time, and its pusher may be waiting for this thread).
  std::unique_ptr<Engine> server_engine_;
  std::optional<KvShard> shard_;

  std::mutex mutex_;
  std::condition_variable wake_, released_cv_;
  Inbox inbox_;
  bool news_ = false, stop_ = false, released_ = false, finishing_ = false;
  std::exception_ptr broken_;
  std::uint64_t next_request_ = 0;

  // This process's receives from its own shard, by request (the reply
  // operations copy into them from engine threads).
  std::mutex local_mutex_;
  std::condition_variable local_copied_;
  std::map<std::uint64_t, LocalReceive> local_receives_;

  // The progress thread's own.
  std::list<ActiveJob> jobs_;
  std::map<std::uint64_t, ActiveJob*> watched_;  // request -> its job
  std::list<PendingPayload> payloads_;
  std::vector<Tensor> abandoned_;  // receive buffers of payloads that break_node gave up on
  std::list<ValueSend> value_sends_;
  std::list<StatusSend> status_sends_;
  std::optional<std::pair<MPI_Request, std::promise<void>>> barrier_;
  Clock::time_point barrier_started_;
  MPI_Request header_recv_ = MPI_REQUEST_NULL, status_recv_ = MPI_REQUEST_NULL;
  kv_wire::Header header_in_;
  kv_wire::Status status_in_;
  Clock::time_point last_message_, last_active_, last_alive_sent_;
  // By worker rank: when a message of it last came, and whether it finished.
  std::vector<Clock::time_point> heard_from_;
  std::vector<bool> finished_from_;
  bool finish_sent_ = false;  // under mutex_: no more alive messages

  std::thread thread_;
  // Set by the progress thread itself: thread_ is assigned only after that
  // thread started, so reading it there would race with the assignment.
  static inline thread_local const KvNode* t_progress_node = nullptr;
};

}  // namespace depengine::detail
