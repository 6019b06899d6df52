#pragma once
// HeldWorker: an op that keeps its worker busy on its own core until
// released (a sleeping worker's CPU could be the frontend's, where it helps
// anyway); bounded, so that a failure is an assertion, not a hang. It has
// begun once the constructor returns; release it before the engine waits.
//
//   HeldWorker held(engine);   // the engine's one worker is busy now
//   engine.push(...);          // these queue up behind it
//   held.release();

#include <atomic>
#include <chrono>
#include <thread>

#include <depengine/engine.h>

class HeldWorker {
 public:
  explicit HeldWorker(depengine::Engine& engine) : var_(engine.new_var()) {
    engine.push([this](depengine::RunContext&) {
      started_ = true;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!release_.load() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    }, {}, {var_});
    while (!started_.load()) std::this_thread::yield();
  }
  /// The variable the op writes.
  depengine::Var var() const { return var_; }
  void release() { release_ = true; }

 private:
  const depengine::Var var_;
  std::atomic<bool> started_{false};
  std::atomic<bool> release_{false};
};
