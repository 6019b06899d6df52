#include "sync/short_slice.h"

#include <chrono>
#include <cstdint>

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "sync/tuning.h"

namespace depengine::detail {
namespace {

thread_local bool t_short = false;

}  // namespace

void use_short_slice(bool short_slice) {
  if (t_short == short_slice) return;
  t_short = short_slice;
#if defined(__linux__) && defined(SYS_sched_setattr)
  // Keep the thread's policy and nice value: sched_setattr sets both.
  SchedAttr attr;
  if (syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0) != 0 || attr.policy != 0) return;
  attr.size = sizeof(attr);
  attr.flags = 0;
  // 0: the default slice.
  attr.runtime_ns = short_slice ? static_cast<std::uint64_t>(std::chrono::nanoseconds(tuning::kWorkerSlice).count()) : 0;
  syscall(SYS_sched_setattr, 0, &attr, 0);  // refused or ignored: the slice stays
#endif
}

}  // namespace depengine::detail
