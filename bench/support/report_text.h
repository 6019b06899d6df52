#pragma once
// Text for the benchmarks' reports: JSON numbers and message sizes.

#include <cstddef>
#include <cstdio>
#include <string>

/// A JSON number that keeps nanoseconds of a time in seconds.
inline std::string number(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", v);
  return text;
}

/// 4 KiB, 16 MiB, 512 B.
inline std::string size_text(std::size_t bytes) {
  if (bytes >= (1u << 20)) return std::to_string(bytes >> 20) + " MiB";
  if (bytes >= (1u << 10)) return std::to_string(bytes >> 10) + " KiB";
  return std::to_string(bytes) + " B";
}
