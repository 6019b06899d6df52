#pragma once
// depbench's command line.

#include <iosfwd>
#include <string>
#include <variant>
#include <vector>

#include "bench/depbench/scenario.h"

namespace depbench {

struct Options {
  Config config;
  std::vector<std::string> scenarios;  // in run order
  std::string json_path, report_path, trace_path;
};

/// The options, or the exit code when the program must stop now: 0 after
/// --help, non-zero after a bad argument (with the reason on `err`).
std::variant<Options, int> parse_command_line(int argc, char** argv, std::ostream& out, std::ostream& err);

}  // namespace depbench
