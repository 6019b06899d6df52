#pragma once
// Reading the engine's numeric environment variables, with one rule for all
// of them: unset or empty means the default, anything but a whole number in
// range is an error that names the variable, its range and what it held.

namespace depengine::detail {

/// The value of environment variable `name`, or `fallback` when it is unset
/// or empty. Throws std::invalid_argument ("depengine: NAME must be a number
/// from MIN to MAX, not 'TEXT'") for anything else.
long long integer_from_environment(const char* name, long long fallback, long long min, long long max);

}  // namespace depengine::detail
