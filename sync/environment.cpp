#include "sync/environment.h"

#include <cerrno>
#include <cstdlib>
#include <stdexcept>
#include <string>

namespace depengine::detail {

long long integer_from_environment(const char* name, long long fallback, long long min, long long max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return fallback;
  char* end = nullptr;
  errno = 0;
  const long long value = std::strtoll(text, &end, 10);
  if (*end != '\0' || errno == ERANGE || value < min || value > max) {
    throw std::invalid_argument(std::string("depengine: ") + name + " must be a number from " + std::to_string(min) +
                                " to " + std::to_string(max) + ", not '" + text + "'");
  }
  return value;
}

}  // namespace depengine::detail
