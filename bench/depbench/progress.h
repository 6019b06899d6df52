#pragma once
// The progress line on stderr: shown only when stderr is a terminal, so that
// logs and pipes get nothing but the results.

#include <string>

#include "bench/depbench/scenario.h"

namespace depbench {

class ProgressLine {
 public:
  ProgressLine();
  ~ProgressLine();  // clears the line
  void show(int scenario, int scenarios, const std::string& name, Mode mode, int run, int runs);

 private:
  bool enabled_;
};

}  // namespace depbench
