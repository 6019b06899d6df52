#pragma once
// LaunchTrampoline: launches stream-device operations one after the other on
// the calling thread, never nested.
//
// Reporting a launch (ReadyOp::launched) makes the engine submit the
// same-device successors it may now launch early, from inside that call. A
// device that launched them right there would recurse once per link of a
// chain of ready operations (a chain pushed behind a slow CPU operation can be
// thousands long). Instead, a launch that starts while this thread is already
// launching is queued, and the outermost one runs the queue in order.

#include <cstddef>
#include <vector>

#include "depengine/executor.h"

namespace depengine::detail {

class LaunchTrampoline {
 public:
  using LaunchFn = void (*)(void* device, ReadyOp op);

  /// Runs `launch(device, op)` now, or after the launch this thread is
  /// already inside. `launch` must not throw.
  static void run(void* device, LaunchFn launch, ReadyOp op) {
    State& state = local();
    if (state.active) {
      state.queued.push_back({device, launch, op});
      return;
    }
    state.active = true;
    launch(device, op);
    // The queue may grow while it is drained: index, and copy each item out.
    for (std::size_t i = 0; i < state.queued.size(); ++i) {
      const Item item = state.queued[i];
      item.launch(item.device, item.op);
    }
    state.queued.clear();
    state.active = false;
  }

 private:
  struct Item {
    void* device;
    LaunchFn launch;
    ReadyOp op;
  };
  struct State {
    bool active = false;
    std::vector<Item> queued;  // keeps its capacity: no allocation once warm
  };
  static State& local() {
    thread_local State state;
    return state;
  }
};

}  // namespace depengine::detail
