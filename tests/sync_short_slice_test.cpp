// use_short_slice (sync/short_slice.h): the calling thread's slice becomes
// the short one and back to the default, its nice value kept. Skipped where
// the kernel does not keep a slice per thread (before Linux 6.12, or not
// Linux).

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "sync/short_slice.h"
#include "sync/tuning.h"

namespace depengine::detail {
namespace {

#if defined(__linux__) && defined(SYS_sched_getattr)
SchedAttr attr_of_this_thread() {
  SchedAttr attr;
  EXPECT_EQ(syscall(SYS_sched_getattr, 0, &attr, sizeof(attr), 0), 0);
  return attr;
}

// Whether this kernel keeps a slice asked for by sched_setattr, tried on a
// thread of its own.
bool kernel_keeps_slices() {
  bool kept = false;
  std::thread([&] {
    SchedAttr attr = attr_of_this_thread();
    attr.size = sizeof(attr);
    attr.runtime_ns = 200000;
    kept = syscall(SYS_sched_setattr, 0, &attr, 0) == 0 && attr_of_this_thread().runtime_ns == 200000;
  }).join();
  return kept;
}

TEST(ShortSlice, TheThreadsSliceGoesShortAndBackKeepingItsNiceValue) {
  if (!kernel_keeps_slices()) GTEST_SKIP() << "this kernel keeps no slice per thread (Linux 6.12 and later do)";
  // On a thread of its own: the slice and the nice value are per thread.
  std::thread([] {
    ASSERT_EQ(setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 5), 0);
    // Kernels that keep a slice per thread report the default one here.
    const std::uint64_t default_slice = attr_of_this_thread().runtime_ns;
    const auto short_slice = static_cast<std::uint64_t>(std::chrono::nanoseconds(tuning::kWorkerSlice).count());
    use_short_slice(true);
    const SchedAttr short_attr = attr_of_this_thread();
    EXPECT_EQ(short_attr.runtime_ns, short_slice);
    EXPECT_EQ(short_attr.nice, 5);
    use_short_slice(false);
    const SchedAttr default_attr = attr_of_this_thread();
    EXPECT_EQ(default_attr.runtime_ns, default_slice);
    EXPECT_NE(default_attr.runtime_ns, short_slice);
    EXPECT_EQ(default_attr.nice, 5);
  }).join();
}
#else
TEST(ShortSlice, TheThreadsSliceGoesShortAndBackKeepingItsNiceValue) {
  GTEST_SKIP() << "no sched_getattr on this system: use_short_slice is a no-op";
}
#endif

}  // namespace
}  // namespace depengine::detail
