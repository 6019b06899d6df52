#include "devices/emulated/stream_thread.h"

namespace depengine::detail {

StreamThread::StreamThread(Device device, StreamRole role, int index)
    : EmulatedStream(device, role, index), thread_([this] { loop(); }) {}

StreamThread::~StreamThread() { stop(); }

void StreamThread::enqueue(Work work) {
  bool wake = false;
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(work));
    wake = sleeping_;
    sleeping_ = false;
  }
  if (wake) cv_.notify_one();
}

void StreamThread::stop() {
  {
    std::lock_guard lock(mutex_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_one();
  thread_.join();
}

void StreamThread::loop() {
  std::vector<Work> running;
  for (;;) {
    {
      std::unique_lock lock(mutex_);
      while (queue_.empty() && !stopping_) {
        sleeping_ = true;
        cv_.wait(lock);
      }
      if (queue_.empty()) return;
      // Take the whole batch: one lock per batch, and both vectors keep
      // their capacity, so a busy stream allocates nothing.
      running.swap(queue_);
    }
    for (Work& work : running) work();
    running.clear();
  }
}

}  // namespace depengine::detail
