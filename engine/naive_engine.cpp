// NaiveEngine: the same API, run synchronously. Each push runs its operation
// to completion on the pushing thread (device operations are submitted to
// their device and waited for), one push at a time. It is the reference the
// threaded engine is tested against, and the "sync" side of benchmarks.

#include <deque>
#include <mutex>
#include <utility>

#include "engine/engine_core.h"
#include "engine/op_pool.h"
#include "sync/engine_thread_clock.h"
#include "sync/wait_signal.h"

namespace depengine {

using detail::OpBlock;
using detail::OpKind;

namespace {

// The naive engine's CPU device: runs each operation where it is submitted.
class InlineCpuExecutor final : public Executor {
 public:
  void submit(ReadyOp op) override {
    RunContext ctx{.device = op.device(), .property = op.property(), .name = op.name()};
    op.run_and_complete(ctx);
  }
};

}  // namespace

class NaiveEngine final : public EngineCore {
 public:
  explicit NaiveEngine(const EngineOptions& options) : EngineCore(options) {
    add_device(Device::cpu(), std::make_unique<InlineCpuExecutor>());
  }
  ~NaiveEngine() override { shutdown_devices(); }

  int cpu_threads() const override { return 1; }

  void wait_all() override {
    check_blocking_allowed("wait_all");
    if (std::exception_ptr error = take_all_errors()) std::rethrow_exception(error);
  }

  void on_launched(OpBlock*) override {}

  void on_completed(OpBlock* op, std::exception_ptr error) override {
    // Taken back: a pooled block's reset clears `signal` only for wait markers.
    detail::WaitSignal* done = std::exchange(op->signal, nullptr);
    finish(op, std::move(error));
    done->set();
  }

 protected:
  void submit(OpBlock* op) override {
    // The ops run on this thread: its CPU time is the engine's (MachineLoad).
    detail::EngineThreadClock::enlist();
    if (detail::OpObserver* obs = observer()) [[unlikely]] obs->on_push(*op);
    // Pushed from inside one of this engine's operations: it runs once that
    // one has completed, in push order, from the loop below instead of on
    // top of it (a chain of ops that each push the next would otherwise
    // nest as deep as it is long). It is ordered before any delete_var of
    // another thread, which waits for the mutex the loop holds. The same for
    // what a release callback or a device pushes while this thread runs.
    if (in_own_operation() || t_running == this) {
      // Only a release callback can wait here (ops cannot): at once, as
      // before the ops queued behind what it deletes.
      if (op->kind == OpKind::Wait) {
        run(op);
        return;
      }
      std::lock_guard lock(nested_mutex_);
      nested_.push_back(op);
      return;
    }
    std::lock_guard lock(mutex_);
    RunningHere running(this);
    // A delete_var of another thread may have run between the lookup and here.
    if (const detail::Entry* stale = stale_entry(*op)) [[unlikely]] reject_stale(op, *stale);
    run(op);
    for (;;) {
      OpBlock* next;
      {
        std::lock_guard nested_lock(nested_mutex_);
        if (nested_.empty()) break;
        next = nested_.front();
        nested_.pop_front();
      }
      run(next);
    }
  }

 private:
  // Marks the thread that runs this engine's pushes (mutex_ held).
  struct RunningHere {
    explicit RunningHere(const NaiveEngine* engine) : outer(t_running) { t_running = engine; }
    ~RunningHere() { t_running = outer; }
    const NaiveEngine* outer;
  };
  static inline thread_local const NaiveEngine* t_running = nullptr;

  // Runs one push to completion on this thread (mutex_ held).
  void run(OpBlock* op) {
    switch (op->kind) {
      case OpKind::Wait: {
        detail::WaitSignal* signal = op->signal;
        std::exception_ptr error = take_error(*op->entries.front().var);
        if (error) forget_failures_of(*op->entries.front().var);
        detail::OpPool::release(op);
        signal->set(std::move(error));
        return;
      }
      case OpKind::Delete: {
        detail::VarState* var = op->entries.front().var;
        if (op->release) {
          try {
            op->release();
          } catch (...) {
            record_unattached_failure(std::current_exception());
          }
        }
        file_failure_of_deleted(*op, *var);
        detail::OpPool::release(op);
        recycle_var(var);
        return;
      }
      case OpKind::Sync:
      case OpKind::Async:
        break;
    }
    take_input_errors(*op);
    if (std::exception_ptr error = input_error(*op)) {
      if (op->kind == OpKind::Async) op->holds.store(1, std::memory_order_relaxed);
      finish(op, std::move(error));
      return;
    }
    // Hand it to its device (the CPU runs it right here) and wait until it
    // completes: async work and stream devices complete later.
    detail::WaitSignal done;
    op->signal = &done;
    op->executor->submit(ReadyOp(op));
    done.wait();
  }

  void finish(OpBlock* op, std::exception_ptr error) {
    if (error) {
      op->set_error(std::move(error));
      for (detail::Entry& e : op->entries) {
        if (!e.write) continue;
        std::lock_guard lock(e.var->lock);
        e.var->error = op->error;
        e.var->failed.store(true, std::memory_order_release);
      }
      record_failure(*op);
    }
    if (detail::OpObserver* obs = observer()) [[unlikely]] obs->on_complete(*op);
    op_finished(*op);
    release_hold(op);
  }

  std::mutex mutex_;  // one push runs at a time
  std::mutex nested_mutex_;
  std::deque<OpBlock*> nested_;  // pushed by the running op, to run after it
};

std::unique_ptr<EngineCore> make_naive_engine(const EngineOptions& options) {
  return std::make_unique<NaiveEngine>(options);
}

}  // namespace depengine
