/* A C program driving depengine through its C API (compiled as C99).
 *
 * A three-stage pipeline over one buffer: an asynchronous "load" whose work
 * happens on the program's own I/O thread, a "scale" on the engine's workers,
 * and a "sum". Then an operation that fails, to show how a failure reaches
 * the wait that covers it. Exits with 0 when every result is as expected.
 *
 * Build and run: see docs/embedding.md (ctest runs it as embedding_c_pipeline). */

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <depengine/c_api.h>

#define N 1000

/* Prints the failing call and the engine's message, then leaves. */
#define CHECK(call)                                                                       \
  do {                                                                                    \
    depengine_status status_ = (call);                                                    \
    if (status_ != DEPENGINE_OK) {                                                        \
      fprintf(stderr, "%s failed: %s: %s\n", #call, depengine_status_name(status_),       \
              depengine_last_error());                                                    \
      exit(1);                                                                            \
    }                                                                                     \
  } while (0)

struct pipeline {
  double* data;
  double total;
};

/* The program's I/O thread, which exists before and apart from the engine: it
 * serves one load request at a time. */
struct io_service {
  pthread_mutex_t mutex;
  pthread_cond_t wake;
  struct pipeline* request; /* the buffer to fill, or NULL */
  depengine_completion done;
  int stopping;
  pthread_t thread;
};

static void* io_thread_main(void* arg) {
  struct io_service* io = arg;
  int i;
  pthread_mutex_lock(&io->mutex);
  for (;;) {
    while (io->request == NULL && !io->stopping) pthread_cond_wait(&io->wake, &io->mutex);
    if (io->request == NULL) break; /* stopping, and nothing left to serve */
    for (i = 0; i < N; ++i) io->request->data[i] = i + 1; /* "read from disk" */
    io->request = NULL;
    depengine_complete(io->done, NULL); /* NULL: success */
  }
  pthread_mutex_unlock(&io->mutex);
  return NULL;
}

/* The load operation: the engine hands it a completion; it passes the request
 * to the I/O thread, which calls the completion when the data is there. No
 * engine thread waits in the meantime. */
struct load_op {
  struct io_service* io;
  struct pipeline* p;
};

static void start_load(void* user_data, depengine_op_context* ctx, depengine_completion done) {
  struct load_op* load = user_data;
  (void)ctx;
  pthread_mutex_lock(&load->io->mutex);
  load->io->request = load->p;
  load->io->done = done;
  pthread_cond_signal(&load->io->wake);
  pthread_mutex_unlock(&load->io->mutex);
}

static void scale(void* user_data, depengine_op_context* ctx) {
  struct pipeline* p = user_data;
  int i;
  (void)ctx;
  for (i = 0; i < N; ++i) p->data[i] *= 2.0;
}

static void sum(void* user_data, depengine_op_context* ctx) {
  struct pipeline* p = user_data;
  int i;
  (void)ctx;
  p->total = 0;
  for (i = 0; i < N; ++i) p->total += p->data[i];
}

static void parse_config(void* user_data, depengine_op_context* ctx) {
  (void)user_data;
  depengine_op_fail(ctx, "config.ini: line 3: expected '='");
}

static void free_buffer(void* user_data) { free(user_data); }

int main(void) {
  depengine_engine_options options;
  depengine_push_options named;
  depengine_engine* engine;
  depengine_var buffer, total, config;
  struct pipeline p;
  struct io_service io;
  struct load_op load;
  depengine_status status;

  pthread_mutex_init(&io.mutex, NULL);
  pthread_cond_init(&io.wake, NULL);
  io.request = NULL;
  io.stopping = 0;
  if (pthread_create(&io.thread, NULL, io_thread_main, &io) != 0) return 1;

  CHECK(depengine_engine_options_init(&options));
  options.cpu_threads = 2;
  CHECK(depengine_engine_create(&options, &engine));

  p.data = malloc(N * sizeof *p.data);
  p.total = 0;
  if (p.data == NULL) return 1;
  CHECK(depengine_new_var(engine, "buffer", &buffer));
  CHECK(depengine_new_var(engine, "total", &total));

  /* Each push returns at once; the engine orders the three by what they read
   * and write. */
  CHECK(depengine_push_options_init(&named));
  named.name = "load";
  load.io = &io;
  load.p = &p;
  CHECK(depengine_push_async(engine, start_load, &load, NULL, 0, &buffer, 1, &named));
  named.name = "scale";
  CHECK(depengine_push(engine, scale, &p, NULL, 0, &buffer, 1, &named));
  named.name = "sum";
  CHECK(depengine_push(engine, sum, &p, &buffer, 1, &total, 1, &named));

  CHECK(depengine_wait_to_read(engine, total));
  printf("total = %.0f\n", p.total);
  if (p.total != (double)N * (N + 1)) {
    fprintf(stderr, "expected %.0f\n", (double)N * (N + 1));
    return 1;
  }

  /* A failure: reported by the wait that covers the failed variable. */
  CHECK(depengine_new_var(engine, "config", &config));
  CHECK(depengine_push(engine, parse_config, NULL, NULL, 0, &config, 1, NULL));
  status = depengine_wait_to_read(engine, config);
  printf("wait_to_read(config): %s: %s\n", depengine_status_name(status), depengine_last_error());
  if (status != DEPENGINE_ERROR_OPERATION_FAILED || strstr(depengine_last_error(), "line 3") == NULL) return 1;

  /* The buffer is freed by the engine once no operation can touch it. */
  CHECK(depengine_delete_var(engine, buffer, free_buffer, p.data));
  CHECK(depengine_delete_var(engine, total, NULL, NULL));
  CHECK(depengine_delete_var(engine, config, NULL, NULL));
  CHECK(depengine_engine_destroy(engine));

  pthread_mutex_lock(&io.mutex);
  io.stopping = 1;
  pthread_cond_signal(&io.wake);
  pthread_mutex_unlock(&io.mutex);
  pthread_join(io.thread, NULL);
  printf("ok\n");
  return 0;
}
