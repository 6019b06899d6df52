// The group of one process: every collective is local, so the communicator
// never hands it an exchange; a stray one ends at once.

#include "comm/process_group.h"

namespace depengine::detail {

namespace {

class SingleProcessGroup final : public ProcessGroup {
 public:
  explicit SingleProcessGroup(std::string why) : why_(std::move(why)) {}
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "one process (" + why_ + ")"; }
  CommStats stats() const override { return {}; }
  std::uint64_t reserve(std::uint64_t count) override {
    const std::uint64_t first = next_;
    next_ += count;
    return first;
  }
  void start(std::uint64_t, const Exchange&, ExchangeDone done) override { done(nullptr); }
  void skip(std::uint64_t, const Exchange&) override {}

 private:
  std::string why_;
  std::uint64_t next_ = 0;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_single_process_group(std::string why) {
  return std::make_shared<SingleProcessGroup>(std::move(why));
}

}  // namespace depengine::detail
