#pragma once
// Prefetching a line this thread is about to write. GCC lowers
// __builtin_prefetch(p, 1) to a plain read prefetch unless built for a CPU
// with PREFETCHW, and a read prefetch leaves the line shared: the first store
// then still waits for the other core to give it up. PREFETCHW (0F 0D /1)
// runs as a no-op on x86-64 CPUs without it, so it is safe everywhere.

namespace depengine::detail {

inline void prefetch_for_write(const void* address) {
#if defined(__x86_64__)
  asm volatile("prefetchw %0" : : "m"(*static_cast<const char*>(address)));
#else
  __builtin_prefetch(address, 1);
#endif
}

}  // namespace depengine::detail
