#include <gtest/gtest.h>

#include <atomic>
#include <depengine/engine.h>

using namespace depengine;

TEST(Smoke, ChainComputes) {
  Engine engine;
  int a = 0, b = 0;
  Var va = engine.new_var("a"), vb = engine.new_var("b");
  engine.push([&](RunContext&) { a = 20; }, {}, {va});
  engine.push([&](RunContext&) { b = a + 22; }, {va}, {vb});
  engine.wait_to_read(vb);
  EXPECT_EQ(b, 42);
}
