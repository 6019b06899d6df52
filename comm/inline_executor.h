#pragma once
// InlineExecutor: a device that runs each operation on the thread that
// found it ready — for operations that only hand work to a progress thread
// (a collective's exchange, a KVStore request or reply), so that handing
// it over wakes no CPU worker. Such an operation must never block.

#include <depengine/executor.h>

namespace depengine::detail {

class InlineExecutor final : public Executor {
 public:
  void submit(ReadyOp op) override {
    RunContext ctx{.device = op.device(), .property = op.property(), .name = op.name()};
    op.run_and_complete(ctx);
  }
};

}  // namespace depengine::detail
