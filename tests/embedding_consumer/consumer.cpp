// The C++ API from a project that found depengine with find_package or
// add_subdirectory. Exits with 0 when the engine computed the right value.
#include <depengine/engine.h>

#include <cstdio>

int main() {
  depengine::Engine engine;
  int a = 0, b = 0;
  depengine::Var va = engine.new_var("a"), vb = engine.new_var("b");
  engine.push([&](depengine::RunContext&) { a = 20; }, {}, {va});
  engine.push([&](depengine::RunContext&) { b = a + 22; }, {va}, {vb});
  engine.wait_to_read(vb);
  std::printf("consumer_cpp: b = %d\n", b);
  return b == 42 ? 0 : 1;
}
