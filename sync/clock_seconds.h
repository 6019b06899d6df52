#pragma once
// clock_seconds(clock): a POSIX clock's reading in seconds (a thread's
// CPU-time clock, say); none where it cannot be read.
//
//   std::optional<double> own = clock_seconds(CLOCK_THREAD_CPUTIME_ID);

#include <optional>

#include <time.h>

namespace depengine::detail {

inline std::optional<double> clock_seconds(clockid_t clock) {
  timespec t{};
  if (clock_gettime(clock, &t) != 0) return std::nullopt;
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

}  // namespace depengine::detail
