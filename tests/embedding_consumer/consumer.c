/* The C API from a project that found depengine with find_package,
 * add_subdirectory or pkg-config. Exits with 0 when the engine computed the
 * right value. */
#include <depengine/c_api.h>

#include <stdio.h>

static void set_answer(void* data, depengine_op_context* ctx) {
  (void)ctx;
  *(int*)data = 42;
}

int main(void) {
  depengine_engine* engine;
  depengine_var v;
  int value = 0;
  if (depengine_engine_create(NULL, &engine) != DEPENGINE_OK ||
      depengine_new_var(engine, "value", &v) != DEPENGINE_OK ||
      depengine_push(engine, set_answer, &value, NULL, 0, &v, 1, NULL) != DEPENGINE_OK ||
      depengine_wait_to_read(engine, v) != DEPENGINE_OK || depengine_engine_destroy(engine) != DEPENGINE_OK) {
    fprintf(stderr, "consumer_c: %s\n", depengine_last_error());
    return 1;
  }
  printf("consumer_c: value = %d\n", value);
  return value == 42 ? 0 : 1;
}
