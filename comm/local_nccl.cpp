#include "comm/local_nccl.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "depengine/cuda_memory.h"
#include "devices/cuda/cuda_check.h"
#include "devices/cuda/device_guard.h"

namespace depengine::detail {

namespace {

void check_nccl(ncclResult_t result, std::string_view what) {
  if (result == ncclSuccess) return;
  throw std::runtime_error("depengine: " + std::string(what) + ": " + ncclGetErrorString(result) + " (" +
                           ncclGetLastError(nullptr) + ")");
}

ncclDataType_t nccl_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ncclFloat32;
    case DType::float64: return ncclFloat64;
    case DType::float16: return ncclFloat16;
    case DType::bfloat16: return ncclBfloat16;
    case DType::int32: return ncclInt32;
  }
  throw std::invalid_argument("depengine: no NCCL type for dtype " + std::to_string(static_cast<int>(dtype)));
}

// The NCCL communicators of one list of GPUs: rank i on GPU devices[i].
class NcclComms {
 public:
  explicit NcclComms(const std::vector<int>& devices) : comms_(devices.size()) {
    check_nccl(ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()),
               "ncclCommInitAll");
  }
  ~NcclComms() {
    for (ncclComm_t comm : comms_) ncclCommDestroy(comm);
  }
  NcclComms(const NcclComms&) = delete;
  NcclComms& operator=(const NcclComms&) = delete;

  ncclComm_t operator[](std::size_t rank) const { return comms_[rank]; }

  /// The error NCCL found while the collectives ran, if any.
  std::exception_ptr async_error() const {
    for (ncclComm_t comm : comms_) {
      ncclResult_t state = ncclSuccess;
      if (ncclCommGetAsyncError(comm, &state) != ncclSuccess || state != ncclSuccess) {
        return std::make_exception_ptr(std::runtime_error(std::string("depengine: an NCCL collective failed: ") +
                                                          ncclGetErrorString(state)));
      }
    }
    return nullptr;
  }

 private:
  std::vector<ncclComm_t> comms_;
};

// One collective as NCCL takes it: per rank a send and a receive buffer;
// `count` in NCCL's sense (per rank for allgather's input and
// reduce_scatter's output).
struct NcclCall {
  NcclCollective kind;
  ncclRedOp_t op;
  ncclDataType_t type;
  std::size_t count;
  std::vector<int> devices;
  std::vector<const void*> send;
  std::vector<void*> receive;
};

ncclResult_t enqueue(const NcclCall& call, std::size_t rank, ncclComm_t comm, cudaStream_t stream) {
  const void* send = call.send[rank];
  void* receive = call.receive[rank];
  switch (call.kind) {
    case NcclCollective::allreduce: return ncclAllReduce(send, receive, call.count, call.type, call.op, comm, stream);
    case NcclCollective::broadcast: return ncclBroadcast(send, receive, call.count, call.type, 0, comm, stream);
    case NcclCollective::allgather: return ncclAllGather(send, receive, call.count, call.type, comm, stream);
    case NcclCollective::reduce_scatter:
      return ncclReduceScatter(send, receive, call.count, call.type, call.op, comm, stream);
  }
  return ncclInvalidArgument;
}

// A launched collective: the event that ends it on each of its GPUs.
struct Launched {
  std::vector<cudaEvent_t> events;
  std::shared_ptr<const NcclComms> comms;
  Completion done;
};

void destroy_events(std::vector<cudaEvent_t>& events) {
  for (cudaEvent_t event : events) cudaEventDestroy(event);
  events.clear();
}

// Completes launched collectives in launch order, each once its events have
// completed. The events are blocking-sync ones: the thread sleeps while the
// GPUs work instead of spinning on them.
class CompletionThread {
 public:
  CompletionThread() : state_(std::make_shared<State>()) {
    thread_ = std::thread([state = state_] { run(*state); });
  }
  // Completes what is queued first. Completing an operation can release the
  // last reference to the LocalNccl, on this thread itself: then it lets
  // the thread finish the queue alone (the thread shares its state).
  ~CompletionThread() {
    {
      std::lock_guard lock(state_->mutex);
      state_->stopping = true;
    }
    state_->wake.notify_one();
    if (thread_.get_id() == std::this_thread::get_id()) thread_.detach();
    else thread_.join();
  }
  CompletionThread(const CompletionThread&) = delete;
  CompletionThread& operator=(const CompletionThread&) = delete;

  void add(Launched launched) {
    {
      std::lock_guard lock(state_->mutex);
      state_->queue.push_back(std::move(launched));
    }
    state_->wake.notify_one();
  }

 private:
  struct State {
    std::mutex mutex;
    std::condition_variable wake;
    std::deque<Launched> queue;
    bool stopping = false;
  };

  static void run(State& state) {
    std::unique_lock lock(state.mutex);
    for (;;) {
      state.wake.wait(lock, [&] { return state.stopping || !state.queue.empty(); });
      if (state.queue.empty()) return;
      Launched launched = std::move(state.queue.front());
      state.queue.pop_front();
      lock.unlock();
      finish(launched);
      lock.lock();
    }
  }

  static void finish(Launched& launched) {
    std::exception_ptr error;
    for (cudaEvent_t event : launched.events) {
      const cudaError_t result = cudaEventSynchronize(event);
      if (result != cudaSuccess && !error) error = cuda_error(result, "waiting for an NCCL collective");
    }
    destroy_events(launched.events);
    if (!error) error = launched.comms->async_error();
    launched.done(error);
  }

  std::shared_ptr<State> state_;
  std::thread thread_;
};

// One NCCL stream per GPU, for every collective on it.
class GpuStreams {
 public:
  GpuStreams() = default;
  ~GpuStreams() {
    for (const auto& [device, stream] : streams_) {
      DeviceGuard guard(device);
      cudaStreamDestroy(stream);
    }
  }
  GpuStreams(const GpuStreams&) = delete;
  GpuStreams& operator=(const GpuStreams&) = delete;

  cudaStream_t of(int device) {  // under the launch mutex
    auto [it, added] = streams_.try_emplace(device, nullptr);
    if (added) {
      DeviceGuard guard(device);
      const cudaError_t result = cudaStreamCreateWithFlags(&it->second, cudaStreamNonBlocking);
      if (result != cudaSuccess) {
        streams_.erase(it);
        check_cuda(result, "cudaStreamCreateWithFlags for NCCL");
      }
    }
    return it->second;
  }

 private:
  std::map<int, cudaStream_t> streams_;
};

class NcclDevices final : public LocalNccl, public std::enable_shared_from_this<NcclDevices> {
 public:
  explicit NcclDevices(int min_gpus) : min_gpus_(min_gpus) {}

  bool takes(const std::vector<Tensor>& inputs, const std::vector<Tensor>& outputs) const override {
    if (static_cast<int>(inputs.size()) < min_gpus_ || outputs.size() != inputs.size()) return false;
    std::vector<int> seen;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Device device = inputs[i].device();
      if (device.kind != DeviceKind::cuda || outputs[i].device() != device) return false;
      if (std::find(seen.begin(), seen.end(), device.index) != seen.end()) return false;
      seen.push_back(device.index);
    }
    return true;
  }

  void push(Engine& engine, NcclCollective kind, ReduceOp op, const std::vector<Tensor>& inputs,
            const std::vector<Tensor>& outputs, const PushOptions& options) override {
    const bool per_rank_output = kind == NcclCollective::reduce_scatter;
    NcclCall call{.kind = kind,
                  .op = op == ReduceOp::mean ? ncclAvg : ncclSum,
                  .type = nccl_type(inputs[0].dtype()),
                  .count = static_cast<std::size_t>(per_rank_output ? outputs[0].numel() : inputs[0].numel()),
                  .devices = {},
                  .send = {},
                  .receive = {}};
    std::vector<Var> reads, writes;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      call.devices.push_back(inputs[i].device().index);
      call.send.push_back(inputs[i].data());
      call.receive.push_back(outputs[i].data());
      writes.push_back(outputs[i].var());
      if (inputs[i].var() != outputs[i].var()) reads.push_back(inputs[i].var());
    }
    engine.push_async(
        [self = shared_from_this(), call = std::move(call)](RunContext&, Completion done) {
          self->launch(call, std::move(done));
        },
        reads, writes, {.priority = options.priority, .name = options.name, .device = Device::cpu()});
  }

 private:
  // Runs as the operation: enqueues every rank's part in one group call.
  void launch(const NcclCall& call, Completion done) {
    if (call.count == 0) return done();
    Launched launched;
    try {
      std::lock_guard lock(launch_mutex_);
      launched.comms = comms_for(call.devices);
      std::vector<cudaStream_t> streams;
      for (int device : call.devices) streams.push_back(streams_.of(device));
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      ncclResult_t failed = ncclSuccess;
      for (std::size_t rank = 0; rank < call.devices.size() && failed == ncclSuccess; ++rank) {
        failed = enqueue(call, rank, (*launched.comms)[rank], streams[rank]);
      }
      const ncclResult_t ended = ncclGroupEnd();  // after every ncclGroupStart, also after a failure
      check_nccl(failed, "enqueueing an NCCL collective");
      check_nccl(ended, "ncclGroupEnd");
      for (std::size_t rank = 0; rank < call.devices.size(); ++rank) {
        DeviceGuard guard(call.devices[rank]);
        cudaEvent_t event = nullptr;
        check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming | cudaEventBlockingSync),
                   "cudaEventCreateWithFlags");
        launched.events.push_back(event);
        check_cuda(cudaEventRecord(event, streams[rank]), "cudaEventRecord");
      }
    } catch (...) {
      destroy_events(launched.events);
      return done(std::current_exception());
    }
    launched.done = std::move(done);
    completions_.add(std::move(launched));
  }

  // Under launch_mutex_. Made at the first collective over these GPUs:
  // ncclCommInitAll takes a while, on the worker that runs the operation.
  std::shared_ptr<const NcclComms> comms_for(const std::vector<int>& devices) {
    auto& comms = comms_[devices];
    if (!comms) comms = std::make_shared<const NcclComms>(devices);
    return comms;
  }

  const int min_gpus_;
  std::mutex launch_mutex_;
  std::map<std::vector<int>, std::shared_ptr<const NcclComms>> comms_;  // by rank order of GPUs
  GpuStreams streams_;
  CompletionThread completions_;  // last: completes what is queued before the streams go
};

}  // namespace

std::shared_ptr<LocalNccl> make_local_nccl(int min_gpus) {
  if (cuda_device_count() < min_gpus) return nullptr;
  return std::make_shared<NcclDevices>(min_gpus);
}

}  // namespace depengine::detail
