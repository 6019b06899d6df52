#ifndef DEPENGINE_C_API_H
#define DEPENGINE_C_API_H
/* \file c_api.h
 * The C API of depengine: everything a C program, or any language with a C
 * FFI (Python ctypes, Rust, Go, Julia...), needs to use the engine.
 *
 * Pure C99, no C++ types. Every function returns a `depengine_status`; on an
 * error it also sets a message that `depengine_last_error()` returns on the
 * same thread. No C++ exception ever crosses this boundary, and misuse that
 * can be detected (a null engine, an unknown variable, a completion called
 * twice, a blocking call inside an operation) is reported, never a crash.
 * Misuse that cannot be detected is undefined: using an engine after
 * `depengine_engine_destroy`, an `depengine_op_context` after its operation
 * returned, or a `depengine_engine_options` not set up by
 * `depengine_engine_options_init`.
 *
 * Link with `depengine::depengine` (CMake) or `pkg-config --libs depengine`.
 *
 *   #include <depengine/c_api.h>
 *
 *   static void produce(void* data, depengine_op_context* ctx) {
 *     (void)ctx;
 *     *(int*)data = 42;
 *   }
 *
 *   int main(void) {
 *     depengine_engine* engine;
 *     depengine_var v;
 *     int value = 0;
 *     if (depengine_engine_create(NULL, &engine) != DEPENGINE_OK) return 1;
 *     depengine_new_var(engine, "value", &v);
 *     depengine_push(engine, produce, &value, NULL, 0, &v, 1, NULL);
 *     if (depengine_wait_to_read(engine, v) != DEPENGINE_OK) {
 *       fprintf(stderr, "%s\n", depengine_last_error());
 *     }
 *     depengine_engine_destroy(engine);   // value == 42
 *     return 0;
 *   }
 *
 * Thread safety: every function may be called from any thread at once, except
 * `depengine_engine_destroy`, which must be the last call on its engine.
 * Inside an operation, pushing, creating and deleting variables and calling
 * `depengine_complete` are allowed; the blocking calls (the waits, destroy)
 * return DEPENGINE_ERROR_BAD_STATE there, because waiting could deadlock.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
/* Nothing is ever thrown across this API; C++ callers may rely on it. */
#define DEPENGINE_NOEXCEPT noexcept
extern "C" {
#else
#define DEPENGINE_NOEXCEPT
#endif

/* Version of this API. Compare with `depengine_c_api_version()` to check that
 * the library loaded at run time (e.g. through ctypes) is at least as new as
 * the header: a later version only adds (2: depengine_push_options::bytes). */
#define DEPENGINE_C_API_VERSION 2

/* The result of every call. The values never change between versions. */
typedef enum depengine_status {
  DEPENGINE_OK = 0,
  /* A null engine, output pointer or function; an array pointer that is null
   * with a non-zero count; a variable listed twice in one push; options not
   * initialized by their _init function or out of range; a device the engine
   * does not have. */
  DEPENGINE_ERROR_INVALID_ARGUMENT = 1,
  /* A variable handle that is null, was deleted, or belongs to another engine. */
  DEPENGINE_ERROR_UNKNOWN_VAR = 2,
  /* A wait covers an operation that failed (its function called
   * depengine_op_fail, or its completion carried an error message); the
   * message is that operation's. The error is then cleared, and the engine
   * goes on working. */
  DEPENGINE_ERROR_OPERATION_FAILED = 3,
  /* The call is not allowed now: a blocking call (wait, destroy) from inside
   * an operation; a completion that was already called or is unknown;
   * depengine_op_fail inside an asynchronous operation. */
  DEPENGINE_ERROR_BAD_STATE = 4,
  /* A feature this build of the library leaves out: the profiler, when built
   * with DEPENGINE_PROFILER_HOOKS=OFF (depengine_profiler_start). */
  DEPENGINE_ERROR_NOT_AVAILABLE = 5,
  /* Memory, or the engine's room for live variables, is exhausted. */
  DEPENGINE_ERROR_OUT_OF_MEMORY = 6,
  /* An unexpected failure inside the library; the message says what. */
  DEPENGINE_ERROR_INTERNAL = 7,
  /* A file could not be written (depengine_profiler_dump). */
  DEPENGINE_ERROR_IO = 8
} depengine_status;

typedef enum depengine_engine_kind {
  DEPENGINE_ENGINE_THREADED = 0, /* asynchronous: worker threads, dependency tracking */
  DEPENGINE_ENGINE_NAIVE = 1     /* synchronous: each push runs on the pushing thread */
} depengine_engine_kind;

typedef enum depengine_device_kind {
  DEPENGINE_DEVICE_CPU = 0,
  DEPENGINE_DEVICE_CUDA = 1,
  DEPENGINE_DEVICE_EMULATED = 2,
  DEPENGINE_DEVICE_CUSTOM = 3 /* registered by the embedding framework (C++ Executor) */
} depengine_device_kind;

/* An engine. Opaque; create with depengine_engine_create. */
typedef struct depengine_engine depengine_engine;

/* A variable: the unit operations declare they read or write. A plain value,
 * meaningful only to the engine that created it. 0 is never a valid handle.
 * Every call checks a handle against the engine (a check of the engine's
 * identity, the slot and its generation): a handle of another engine, of a
 * deleted variable, or one made up, gets DEPENGINE_ERROR_UNKNOWN_VAR, short of
 * a 2^-39 chance. */
typedef uint64_t depengine_var;
#define DEPENGINE_NULL_VAR ((depengine_var)0)

/* What a running operation may ask about itself. Opaque, valid only until the
 * operation's function returns. */
typedef struct depengine_op_context depengine_op_context;

/* The handle that completes one asynchronous operation: call
 * depengine_complete with it exactly once. 0 is never a valid handle. */
typedef uint64_t depengine_completion;

/* The function of an operation. It runs on an engine thread once everything
 * it depends on has completed. It reports a failure with depengine_op_fail.
 * It must not throw a C++ exception or longjmp out (a thrown exception is
 * caught and reported as the operation's failure). */
typedef void (*depengine_op_fn)(void* user_data, depengine_op_context* ctx);

/* The function of an asynchronous operation: it starts work that finishes
 * elsewhere (an I/O thread, a callback, another thread pool), which then calls
 * depengine_complete(done, ...). It may also call it before returning. */
typedef void (*depengine_async_op_fn)(void* user_data, depengine_op_context* ctx, depengine_completion done);

/* Called once a deleted variable is no longer used by any operation: the
 * moment to free what it stood for. */
typedef void (*depengine_release_fn)(void* user_data);

/* Options of an engine. Always call depengine_engine_options_init first; it
 * sets `struct_size`, which lets later versions add fields compatibly. */
typedef struct depengine_engine_options {
  size_t struct_size;
  depengine_engine_kind kind;   /* default DEPENGINE_ENGINE_THREADED */
  int cpu_threads;              /* worker threads of the CPU device; 0 (default): one per core
                                   the process may run on (its CPU affinity) */
  size_t max_ops_in_flight;     /* back-pressure bound on operations in flight; default 65536 */
  int read_environment;         /* non-zero (default): DEPENGINE_ENGINE and
                                   DEPENGINE_CPU_THREADS override kind and cpu_threads */
} depengine_engine_options;

/* Options of one push. Always call depengine_push_options_init first. */
typedef struct depengine_push_options {
  size_t struct_size;
  int priority;                      /* among ready operations, higher runs first; default 0 */
  const char* name;                  /* for errors and the profiler, copied; default NULL */
  depengine_device_kind device_kind; /* default DEPENGINE_DEVICE_CPU */
  int device_index;                  /* default 0 */
  size_t bytes;                      /* bytes the operation reads and writes, a hint for the CPU
                                        workers (PushOptions::bytes); default 0: unknown. Added
                                        after the first release: a struct_size that ends before
                                        it is accepted, as 0 */
} depengine_push_options;

/* ---------------------------------------------------------------- errors */

/* DEPENGINE_C_API_VERSION of the library that is running. */
int depengine_c_api_version(void) DEPENGINE_NOEXCEPT;

/* The message of the most recent call on this thread that returned an error
 * ("" if none did). Successful calls leave it unchanged. The text stays valid
 * until the next failing call on this thread. Never NULL. */
const char* depengine_last_error(void) DEPENGINE_NOEXCEPT;

/* The name of a status, e.g. "DEPENGINE_ERROR_UNKNOWN_VAR". Never NULL. */
const char* depengine_status_name(depengine_status status) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- engines */

/* Fills `options` with the defaults and sets its struct_size. */
depengine_status depengine_engine_options_init(depengine_engine_options* options) DEPENGINE_NOEXCEPT;

/* Creates an engine; `options` may be NULL for the defaults. On success
 * `*engine` is the new engine; on an error it is left unchanged. */
depengine_status depengine_engine_create(const depengine_engine_options* options, depengine_engine** engine) DEPENGINE_NOEXCEPT;

/* Waits for every pushed operation (so every completion must eventually be
 * called), stops the engine's threads and frees it. Errors of operations no
 * wait reported are dropped. Not from inside an operation. */
depengine_status depengine_engine_destroy(depengine_engine* engine) DEPENGINE_NOEXCEPT;

/* The number of worker threads of the engine's CPU device (1 for naive). */
depengine_status depengine_engine_cpu_threads(const depengine_engine* engine, int* threads) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- variables */

/* Creates a variable; `name` (may be NULL) is copied and shown in errors. */
depengine_status depengine_new_var(depengine_engine* engine, const char* name, depengine_var* var) DEPENGINE_NOEXCEPT;

/* Deletes `var`. Pushed like a write: earlier operations on it still run.
 * `release` (may be NULL) is called with `user_data` once none of them can
 * touch it any more. Using `var` afterwards gives DEPENGINE_ERROR_UNKNOWN_VAR. */
depengine_status depengine_delete_var(depengine_engine* engine, depengine_var var, depengine_release_fn release,
                                      void* user_data) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- operations */

/* Fills `options` with the defaults and sets its struct_size. */
depengine_status depengine_push_options_init(depengine_push_options* options) DEPENGINE_NOEXCEPT;

/* Pushes an operation that reads `reads[0..num_reads)` and writes
 * `writes[0..num_writes)`; `fn(user_data, ctx)` runs once its dependencies
 * have completed. Returns at once (or after back-pressure). `options` may be
 * NULL. Nothing is pushed when an error is returned. `user_data` must stay
 * valid until the operation has run. */
depengine_status depengine_push(depengine_engine* engine, depengine_op_fn fn, void* user_data,
                                const depengine_var* reads, size_t num_reads, const depengine_var* writes,
                                size_t num_writes, const depengine_push_options* options) DEPENGINE_NOEXCEPT;

/* Like depengine_push, for work that completes elsewhere: the operation ends
 * when depengine_complete is called with the `done` handle `fn` received. */
depengine_status depengine_push_async(depengine_engine* engine, depengine_async_op_fn fn, void* user_data,
                                      const depengine_var* reads, size_t num_reads, const depengine_var* writes,
                                      size_t num_writes, const depengine_push_options* options) DEPENGINE_NOEXCEPT;

/* Completes an asynchronous operation, from any thread. `error_message` NULL
 * means success; otherwise the operation failed with that message (copied),
 * which the waits covering its variables report. A second call with the same
 * handle returns DEPENGINE_ERROR_BAD_STATE. */
depengine_status depengine_complete(depengine_completion done, const char* error_message) DEPENGINE_NOEXCEPT;

/* Inside an operation's function: marks the operation failed with `message`
 * (copied) once the function returns. The variables it writes become failed,
 * later operations touching them are skipped, and the next wait covering them
 * returns DEPENGINE_ERROR_OPERATION_FAILED with this message. Asynchronous
 * operations report failure through depengine_complete instead. */
depengine_status depengine_op_fail(depengine_op_context* ctx, const char* message) DEPENGINE_NOEXCEPT;

/* Inside an operation: the device it runs on. Either output may be NULL. */
depengine_status depengine_op_device(const depengine_op_context* ctx, depengine_device_kind* kind, int* index) DEPENGINE_NOEXCEPT;

/* Inside an operation on a stream device: the stream to enqueue work on (a
 * cudaStream_t on CUDA); NULL on the CPU. */
depengine_status depengine_op_stream(const depengine_op_context* ctx, void** stream) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- waiting */

/* Returns once every write to `var` pushed before the call has completed.
 * DEPENGINE_ERROR_OPERATION_FAILED if one of them failed (or was skipped
 * because of an earlier failure). */
depengine_status depengine_wait_to_read(depengine_engine* engine, depengine_var var) DEPENGINE_NOEXCEPT;

/* Like depengine_wait_to_read, and also waits for the earlier reads of `var`. */
depengine_status depengine_wait_to_write(depengine_engine* engine, depengine_var var) DEPENGINE_NOEXCEPT;

/* Returns once every operation pushed before the call has completed;
 * DEPENGINE_ERROR_OPERATION_FAILED with the first error no wait reported. */
depengine_status depengine_wait_all(depengine_engine* engine) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- graphs */

/* A captured sequence of pushes (see depengine/graph.h and docs/graphs.md).
 * Free it with depengine_graph_free before destroying its engine. */
typedef struct depengine_graph depengine_graph;

/* Starts capturing on the calling thread: what it pushes on `engine` until
 * depengine_capture_end (push, push_async, new_var, delete_var) is recorded,
 * not run. The waits return DEPENGINE_ERROR_BAD_STATE meanwhile; pushes of
 * other threads run as usual. DEPENGINE_ERROR_BAD_STATE if this thread
 * already captures. */
depengine_status depengine_capture_begin(depengine_engine* engine) DEPENGINE_NOEXCEPT;

/* Ends the capture begun on this thread and returns what it recorded.
 * DEPENGINE_ERROR_BAD_STATE if this thread began none on `engine`;
 * DEPENGINE_ERROR_INVALID_ARGUMENT (the capture ends, no graph is made) if
 * it deleted a variable made before it. End a capture before destroying its
 * engine. */
depengine_status depengine_capture_end(depengine_engine* engine, depengine_graph** graph) DEPENGINE_NOEXCEPT;

/* Pushes the recorded operations again, in their order; returns at once.
 * `options` may be NULL (its device must be the CPU). Errors: INVALID_ARGUMENT
 * for a null argument or a graph of another engine, UNKNOWN_VAR when a
 * variable the graph uses was deleted, BAD_STATE inside a capture. */
depengine_status depengine_replay(depengine_engine* engine, const depengine_graph* graph,
                                  const depengine_push_options* options) DEPENGINE_NOEXCEPT;

/* The number of recorded operations. */
depengine_status depengine_graph_size(const depengine_graph* graph, size_t* size) DEPENGINE_NOEXCEPT;

/* Frees the graph; the variables its capture deleted are deleted once its
 * replays in flight are done. NULL is accepted and does nothing. */
depengine_status depengine_graph_free(depengine_graph* graph) DEPENGINE_NOEXCEPT;

/* ---------------------------------------------------------------- profiler */

/* Starts (or resumes) recording the operations of `engine`: names (the push
 * option `name`), devices, threads, start and end times, dependencies.
 * DEPENGINE_ERROR_BAD_STATE if the engine is already profiled by the
 * DEPENGINE_PROFILE environment variable; DEPENGINE_ERROR_NOT_AVAILABLE if the
 * library was built without the profiler's hooks (DEPENGINE_PROFILER_HOOKS=OFF). */
depengine_status depengine_profiler_start(depengine_engine* engine) DEPENGINE_NOEXCEPT;

/* Stops recording; what was recorded stays for depengine_profiler_dump.
 * Operations still running are left out: wait for them first to keep them.
 * Does nothing when not recording. */
depengine_status depengine_profiler_stop(depengine_engine* engine) DEPENGINE_NOEXCEPT;

/* Writes what was recorded to `path` as Chrome trace-event JSON (open it in
 * https://ui.perfetto.dev or chrome://tracing). DEPENGINE_ERROR_BAD_STATE if
 * the profiler was never started, DEPENGINE_ERROR_IO if the file cannot be
 * written. */
depengine_status depengine_profiler_dump(depengine_engine* engine, const char* path) DEPENGINE_NOEXCEPT;

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DEPENGINE_C_API_H */
