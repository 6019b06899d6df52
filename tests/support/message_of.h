#pragma once
// message_of(f): what the exception `f` throws says, or "" when it throws
// nothing — for tests that assert on error messages.

#include <exception>
#include <string>

template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}
