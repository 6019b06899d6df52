// The numeric environment variables' one rule (sync/environment.h).

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "sync/environment.h"

namespace depengine::detail {
namespace {

constexpr const char* kName = "DEPENGINE_TEST_NUMBER";

std::string message_for(const char* value) {
  ::setenv(kName, value, 1);
  try {
    integer_from_environment(kName, 7, 1, 100);
  } catch (const std::invalid_argument& e) {
    ::unsetenv(kName);
    return e.what();
  }
  ::unsetenv(kName);
  return "";
}

TEST(Environment, UnsetOrEmptyGivesTheFallbackUnchecked) {
  ::unsetenv(kName);
  EXPECT_EQ(integer_from_environment(kName, 0, 1, 100), 0);
  ::setenv(kName, "", 1);
  EXPECT_EQ(integer_from_environment(kName, 7, 1, 100), 7);
  ::unsetenv(kName);
}

TEST(Environment, ANumberInRangeIsTaken) {
  for (const auto& [text, value] : {std::pair{"1", 1}, {"100", 100}, {"42", 42}}) {
    ::setenv(kName, text, 1);
    EXPECT_EQ(integer_from_environment(kName, 7, 1, 100), value) << text;
  }
  ::unsetenv(kName);
}

TEST(Environment, AnythingElseThrowsNamingTheVariableItsRangeAndItsText) {
  EXPECT_EQ(message_for("0"), "depengine: DEPENGINE_TEST_NUMBER must be a number from 1 to 100, not '0'");
  for (const char* bad : {"101", "-3", "ten", "12x", "1.5", "99999999999999999999999"}) {
    const std::string message = message_for(bad);
    EXPECT_NE(message.find("DEPENGINE_TEST_NUMBER must be a number from 1 to 100"), std::string::npos) << bad;
    EXPECT_NE(message.find(std::string("'") + bad + "'"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace depengine::detail
