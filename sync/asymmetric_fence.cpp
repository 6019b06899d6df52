#include "sync/asymmetric_fence.h"

#include <cstdio>
#include <exception>
#include <mutex>

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace depengine::detail {

std::atomic<bool> AsymmetricFence::expedited_{false};

#if defined(__linux__)
namespace {
long membarrier(int command) { return syscall(__NR_membarrier, command, 0, 0); }
}  // namespace

void AsymmetricFence::init() {
  static std::once_flag once;
  std::call_once(once, [] {
    const long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || (supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) == 0) return;
    if (membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0) return;
    expedited_.store(true, std::memory_order_release);
  });
}

void AsymmetricFence::heavy() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!expedited_.load(std::memory_order_acquire)) return;
  // Cannot fail once registered (a fork()ed child keeps the registration,
  // exec() ends it along with expedited_); if it did, light() sides would be
  // left unordered and ops could be stranded, so stop loudly instead.
  if (membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0) {
    std::fputs("depengine: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration\n", stderr);
    std::terminate();
  }
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
#else
void AsymmetricFence::init() {}
void AsymmetricFence::heavy() { std::atomic_thread_fence(std::memory_order_seq_cst); }
#endif

}  // namespace depengine::detail
