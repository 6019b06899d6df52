// The README's twenty lines.
#include <depengine/engine.h>
#include <cstdio>

int main() {
  depengine::Engine engine;                       // oneTBB workers, one per core
  double a = 0, b = 0, c = 0;
  auto va = engine.new_var("a"), vb = engine.new_var("b"), vc = engine.new_var("c");

  engine.push([&](depengine::RunContext&) { a = 1.5; }, {}, {va});        // writes a
  engine.push([&](depengine::RunContext&) { b = 2.5; }, {}, {vb});        // runs alongside
  engine.push([&](depengine::RunContext&) { c = a * b; }, {va, vb}, {vc}); // after both
  engine.push([&](depengine::RunContext&) { a = 0; }, {}, {va});          // after c read a

  engine.wait_to_read(vc);                        // the only place the program waits
  std::printf("c = %g\n", c);                     // c = 3.75
  engine.delete_var(va);                          // freed once nothing uses it
  engine.wait_all();
}
