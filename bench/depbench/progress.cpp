#include "bench/depbench/progress.h"

#include <cstdio>

#include <unistd.h>

namespace depbench {

ProgressLine::ProgressLine() : enabled_(::isatty(STDERR_FILENO) == 1) {}

ProgressLine::~ProgressLine() {
  if (enabled_) std::fputs("\r\033[K", stderr);
}

void ProgressLine::show(int scenario, int scenarios, const std::string& name, Mode mode, int run, int runs) {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K[%d/%d] %s: %s run %d/%d", scenario, scenarios, name.c_str(), to_string(mode), run,
               runs);
  std::fflush(stderr);
}

}  // namespace depbench
