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

#if defined(__linux__) && defined(SYS_sched_setattr)
// The kernel's struct sched_attr (glibc has no wrapper for sched_setattr).
struct SchedAttr {
  std::uint32_t size = sizeof(SchedAttr);
  std::uint32_t policy = 0;  // SCHED_OTHER: the thread keeps its policy and nice value
  std::uint64_t flags = 0;
  std::int32_t nice = 0;
  std::uint32_t priority = 0;
  std::uint64_t runtime_ns = 0;  // the slice, for SCHED_OTHER
  std::uint64_t deadline_ns = 0;
  std::uint64_t period_ns = 0;
};
#endif

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
