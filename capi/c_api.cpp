// The C API (include/depengine/c_api.h) over the C++ Engine.
//
// Every entry point catches everything and turns it into a status code plus a
// thread-local message. Misuse is classified by what the call can check
// before reaching the engine; what the engine itself rejects is classified by
// the exception type it documents (std::invalid_argument, std::logic_error).
// Operation failures are told apart from misuse by type: every operation
// pushed through this API fails with `OpFailure` and nothing else (a C
// function cannot throw, and what a misbehaving one throws is rewrapped), and
// skipped operations carry their predecessor's error, so what a wait rethrows
// from an operation is always an OpFailure.

#include "depengine/c_api.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/container/small_vector.hpp>

#include "depengine/engine.h"
#include "depengine/graph.h"
#include "depengine/profiler.h"
#include "engine/engine_core.h"

namespace {

// A C caller may store any int in an enum field; in C++ loading a value
// outside the enum's range is undefined, so read the field's bits as an int.
template <class Enum>
int raw_enum(const Enum& field) {
  static_assert(sizeof(Enum) == sizeof(int));
  int value;
  std::memcpy(&value, &field, sizeof value);
  return value;
}

// Push options as depengine_push_options_init sets them, in this version's
// layout or in the first release's, which ended before `bytes`.
constexpr std::size_t kFirstPushOptionsSize = offsetof(depengine_push_options, bytes);

bool push_options_initialized(const depengine_push_options& options) {
  return options.struct_size == sizeof(depengine_push_options) || options.struct_size == kFirstPushOptionsSize;
}

std::size_t push_options_bytes(const depengine_push_options& options) {
  return options.struct_size == sizeof(depengine_push_options) ? options.bytes : 0;
}

}  // namespace

struct depengine_engine {
  explicit depengine_engine(const depengine::EngineOptions& options) : engine(options) {}
  depengine::Engine engine;
  // Created by the first depengine_profiler_start. Declared after `engine`
  // so that it is destroyed first, while the engine it records still lives.
  // The mutex serializes start/stop/dump, which the Profiler requires.
  std::mutex profiler_mutex;
  std::unique_ptr<depengine::Profiler> profiler;
};

struct depengine_graph {
  depengine_engine* engine;
  depengine::Graph graph;
};

struct depengine_op_context {
  depengine::RunContext& run;
  bool async;
  std::optional<std::string> failure;
};

namespace {

using depengine::Completion;
using depengine::Var;

/// The error of an operation pushed through the C API.
class OpFailure : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

thread_local std::string t_last_error;

depengine_status fail(depengine_status status, const std::string& message) noexcept {
  try {
    t_last_error = message;
  } catch (...) {
    t_last_error.clear();  // out of memory: the status still says what happened
  }
  return status;
}

depengine_status fail(depengine_status status, const char* call, const char* what) noexcept {
  try {
    return fail(status, std::string(call) + ": " + what);
  } catch (...) {
    return fail(status, std::string());
  }
}

/// `what` as the message of `call`: the engine's own prefix ("depengine: ")
/// gives way to the call's name, so that every message says which call failed.
std::string with_call(const char* call, std::string_view what) {
  constexpr std::string_view engine_prefix = "depengine: ";
  if (what.starts_with(engine_prefix)) what.remove_prefix(engine_prefix.size());
  return std::string(call) + ": " + std::string(what);
}

/// The status for the exception being handled. `invalid_argument` is what a
/// std::invalid_argument from the engine means for the call at hand.
depengine_status status_of_current_exception(const char* call,
                                             depengine_status invalid_argument = DEPENGINE_ERROR_INVALID_ARGUMENT) noexcept {
  try {
    throw;
  } catch (const OpFailure& e) {
    return fail(DEPENGINE_ERROR_OPERATION_FAILED, e.what());
  } catch (const std::bad_alloc&) {
    return fail(DEPENGINE_ERROR_OUT_OF_MEMORY, call, "out of memory");
  } catch (const std::length_error& e) {
    // The engine's (too many live variables) names its limit; a container's
    // ("vector::reserve", boost's "get_next_capacity, ...") needs saying what it is.
    const std::string what = e.what();
    return fail(DEPENGINE_ERROR_OUT_OF_MEMORY,
                with_call(call, what.starts_with("depengine: ") ? what : "out of memory (" + what + ")"));
  } catch (const std::invalid_argument& e) {
    return fail(invalid_argument, with_call(call, e.what()));
  } catch (const std::logic_error& e) {  // a blocking call inside an operation
    return fail(DEPENGINE_ERROR_BAD_STATE, with_call(call, e.what()));
  } catch (const std::exception& e) {
    return fail(DEPENGINE_ERROR_INTERNAL, with_call(call, e.what()));
  } catch (...) {
    return fail(DEPENGINE_ERROR_INTERNAL, call, "unknown exception");
  }
}

// ---------------------------------------------------------------- handles
//
// A variable handle packs a Var into 64 bits: bit 63 set (so 0 is never a
// handle), a 39-bit check of the engine's id, the slot and the generation
// (which the slot holds, so the handle need not), and the slot, which the
// engine's variable table keeps below 2^24. Decoding recomputes the check
// from what the engine holds in that slot now: a handle of another engine,
// of a deleted and reused slot, or of a slot never handed out matches with a
// chance of 2^-39.

constexpr std::uint64_t kHandleBit = std::uint64_t{1} << 63;
constexpr int kCheckShift = 24;
constexpr std::uint64_t kCheckMask = (std::uint64_t{1} << 39) - 1;
constexpr std::uint32_t kSlotLimit = std::uint32_t{1} << kCheckShift;

std::uint64_t handle_check(Var var) {
  // splitmix64's finaliser: every input bit moves about half the output bits.
  std::uint64_t x = (std::uint64_t{var.engine_id()} << 32 | var.generation()) ^
                    (std::uint64_t{var.slot()} * 0x9E3779B97F4A7C15ull);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return (x ^ (x >> 31)) & kCheckMask;
}

depengine_var encode(Var var) {
  if (var.slot() >= kSlotLimit) throw std::logic_error("depengine: variable slot does not fit a C handle");
  return kHandleBit | handle_check(var) << kCheckShift | var.slot();
}

/// The Var behind `handle`, or nullopt when it is not one of `engine`'s.
std::optional<Var> decode(const depengine_engine& engine, depengine_var handle) {
  if ((handle & kHandleBit) == 0) return std::nullopt;
  const Var var = engine.engine.core().live_var(static_cast<std::uint32_t>(handle & (kSlotLimit - 1)));
  if (var.is_null() || ((handle >> kCheckShift) & kCheckMask) != handle_check(var)) return std::nullopt;
  return var;
}

// ---------------------------------------------------------------- completions
//
// A completion handle is a number looked up here, not a pointer, so that a
// second depengine_complete finds nothing and reports it instead of touching
// freed memory. Numbers are never reused.

class CompletionTable {
 public:
  depengine_completion add(Completion done) {
    std::lock_guard lock(mutex_);
    const depengine_completion id = next_id_++;
    pending_.emplace(id, std::move(done));
    return id;
  }

  std::optional<Completion> take(depengine_completion id) {
    std::lock_guard lock(mutex_);
    auto it = pending_.find(id);
    if (it == pending_.end()) return std::nullopt;
    Completion done = std::move(it->second);
    pending_.erase(it);
    return done;
  }

 private:
  std::mutex mutex_;
  depengine_completion next_id_ = 1;
  std::unordered_map<depengine_completion, Completion> pending_;
};

CompletionTable& completions() {
  // Never destroyed: at process exit, engine threads may still complete
  // operations while static destructors run.
  static auto* table = new CompletionTable;
  return *table;
}

// ---------------------------------------------------------------- pushing

using VarBuffer = boost::container::small_vector<Var, 8>;

std::string operation_label(std::string_view name) {
  return name.empty() ? std::string("an operation") : "operation '" + std::string(name) + "'";
}

/// How a message names the variable behind `handle`: its name, or the handle
/// itself (what the C caller holds) when it has none or is not one.
std::string variable_label(const depengine_engine& engine, depengine_var handle) {
  std::string name;
  if (const std::optional<Var> var = decode(engine, handle)) {
    try {
      name = engine.engine.var_name(*var);
    } catch (const std::invalid_argument&) {  // not a variable the engine knows: the handle says it all
    }
  }
  char hex[24];
  std::snprintf(hex, sizeof hex, "0x%016llx", static_cast<unsigned long long>(handle));
  return name.empty() ? std::string(hex) + " (unnamed)" : "'" + name + "'";
}

/// Checks what a push can check before reaching the engine, and fills
/// `reads_out` / `writes_out` and `options_out`.
depengine_status prepare_push(const char* call, depengine_engine* engine, bool fn_is_null,
                              const depengine_var* reads, std::size_t num_reads, const depengine_var* writes,
                              std::size_t num_writes, const depengine_push_options* options,
                              VarBuffer& reads_out, VarBuffer& writes_out, depengine::PushOptions& options_out) {
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (fn_is_null) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null function");
  if ((reads == nullptr && num_reads > 0) || (writes == nullptr && num_writes > 0)) {
    return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null variable array with a non-zero count");
  }
  if (options != nullptr) {
    if (!push_options_initialized(*options)) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call,
                  "push options not initialized with depengine_push_options_init");
    }
    const int device_kind = raw_enum(options->device_kind);
    if (device_kind < DEPENGINE_DEVICE_CPU || device_kind > DEPENGINE_DEVICE_CUSTOM) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "unknown device kind");
    }
    options_out.priority = options->priority;
    if (options->name != nullptr) options_out.name = options->name;
    options_out.device = {static_cast<depengine::DeviceKind>(device_kind), options->device_index};
    options_out.bytes = push_options_bytes(*options);
  }

  auto convert = [&](const depengine_var* handles, std::size_t n, const char* list, VarBuffer& out) {
    out.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      std::optional<Var> var = decode(*engine, handles[i]);
      if (!var) {
        fail(DEPENGINE_ERROR_UNKNOWN_VAR, std::string(call) + ": variable " + std::to_string(i) + " of its " +
                                              list + (handles[i] == DEPENGINE_NULL_VAR ? " is null"
                                                                                       : " is not a variable of this engine"));
        return false;
      }
      out.push_back(*var);
    }
    return true;
  };
  if (!convert(reads, num_reads, "reads", reads_out) || !convert(writes, num_writes, "writes", writes_out)) {
    return DEPENGINE_ERROR_UNKNOWN_VAR;
  }

  // Duplicates are checked here rather than left to the engine so that what
  // the engine rejects afterwards is only a bad device or a deleted variable.
  boost::container::small_vector<depengine_var, 16> all(reads, reads + num_reads);
  all.insert(all.end(), writes, writes + num_writes);
  std::sort(all.begin(), all.end());
  if (auto dup = std::adjacent_find(all.begin(), all.end()); dup != all.end()) {
    const bool in_reads = std::count(reads, reads + num_reads, *dup) > 0;
    const bool in_writes = std::count(writes, writes + num_writes, *dup) > 0;
    return fail(DEPENGINE_ERROR_INVALID_ARGUMENT,
                std::string(call) + ": " + operation_label(options_out.name) + " lists variable " +
                    variable_label(*engine, *dup) + (in_reads && in_writes ? " in both its reads and its writes" : " twice"));
  }
  return DEPENGINE_OK;
}

/// The status of a push the engine rejected: for a present device, only a
/// deleted variable remains.
depengine_status push_rejected(const char* call, depengine_engine* engine, const depengine::PushOptions& options) {
  try {
    throw;
  } catch (const std::invalid_argument&) {
    return status_of_current_exception(call, engine->engine.has_device(options.device)
                                                 ? DEPENGINE_ERROR_UNKNOWN_VAR
                                                 : DEPENGINE_ERROR_INVALID_ARGUMENT);
  } catch (...) {
    return status_of_current_exception(call);
  }
}

/// What a misbehaving C function threw, as the operation's failure.
OpFailure rewrap_current_exception() {
  try {
    throw;
  } catch (const std::exception& e) {
    return OpFailure(e.what());
  } catch (...) {
    return OpFailure("an operation's function threw a non-standard exception");
  }
}

// What depengine_push and depengine_push_async share: check and convert the
// arguments, then hand the converted lists and options to `push`; a push the
// engine rejects becomes a status code.
template <class Push>
depengine_status checked_push(const char* call, depengine_engine* engine, bool null_fn, const depengine_var* reads,
                              size_t num_reads, const depengine_var* writes, size_t num_writes,
                              const depengine_push_options* options, Push&& push) noexcept {
  VarBuffer cpp_reads, cpp_writes;
  depengine::PushOptions cpp_options;
  try {
    const depengine_status checked = prepare_push(call, engine, null_fn, reads, num_reads, writes, num_writes,
                                                  options, cpp_reads, cpp_writes, cpp_options);
    if (checked != DEPENGINE_OK) return checked;
  } catch (...) {
    return status_of_current_exception(call);
  }
  try {
    push(std::span<const Var>(cpp_reads.data(), cpp_reads.size()),
         std::span<const Var>(cpp_writes.data(), cpp_writes.size()), cpp_options);
    return DEPENGINE_OK;
  } catch (...) {
    return push_rejected(call, engine, cpp_options);
  }
}

}  // namespace

extern "C" {

int depengine_c_api_version(void) noexcept { return DEPENGINE_C_API_VERSION; }

const char* depengine_last_error(void) noexcept { return t_last_error.c_str(); }

const char* depengine_status_name(depengine_status status) noexcept {
  switch (status) {
    case DEPENGINE_OK:
      return "DEPENGINE_OK";
    case DEPENGINE_ERROR_INVALID_ARGUMENT:
      return "DEPENGINE_ERROR_INVALID_ARGUMENT";
    case DEPENGINE_ERROR_UNKNOWN_VAR:
      return "DEPENGINE_ERROR_UNKNOWN_VAR";
    case DEPENGINE_ERROR_OPERATION_FAILED:
      return "DEPENGINE_ERROR_OPERATION_FAILED";
    case DEPENGINE_ERROR_BAD_STATE:
      return "DEPENGINE_ERROR_BAD_STATE";
    case DEPENGINE_ERROR_NOT_AVAILABLE:
      return "DEPENGINE_ERROR_NOT_AVAILABLE";
    case DEPENGINE_ERROR_OUT_OF_MEMORY:
      return "DEPENGINE_ERROR_OUT_OF_MEMORY";
    case DEPENGINE_ERROR_INTERNAL:
      return "DEPENGINE_ERROR_INTERNAL";
    case DEPENGINE_ERROR_IO:
      return "DEPENGINE_ERROR_IO";
  }
  return "unknown depengine_status";
}

// ---------------------------------------------------------------- engines

depengine_status depengine_engine_options_init(depengine_engine_options* options) noexcept {
  if (options == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, "depengine_engine_options_init", "null options");
  const depengine::EngineOptions defaults;
  options->struct_size = sizeof(depengine_engine_options);
  options->kind = DEPENGINE_ENGINE_THREADED;
  options->cpu_threads = defaults.cpu_threads;
  options->max_ops_in_flight = defaults.max_ops_in_flight;
  options->read_environment = defaults.read_environment ? 1 : 0;
  return DEPENGINE_OK;
}

depengine_status depengine_engine_create(const depengine_engine_options* options, depengine_engine** engine) noexcept {
  constexpr const char* call = "depengine_engine_create";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  depengine::EngineOptions cpp_options;
  if (options != nullptr) {
    if (options->struct_size != sizeof(depengine_engine_options)) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call,
                  "engine options not initialized with depengine_engine_options_init");
    }
    const int kind = raw_enum(options->kind);
    if (kind != DEPENGINE_ENGINE_THREADED && kind != DEPENGINE_ENGINE_NAIVE) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "unknown engine kind");
    }
    cpp_options.kind = kind == DEPENGINE_ENGINE_NAIVE ? depengine::EngineKind::Naive : depengine::EngineKind::Threaded;
    cpp_options.cpu_threads = options->cpu_threads;
    cpp_options.max_ops_in_flight = options->max_ops_in_flight;
    cpp_options.read_environment = options->read_environment != 0;
  }
  try {
    *engine = new depengine_engine(cpp_options);
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_engine_destroy(depengine_engine* engine) noexcept {
  constexpr const char* call = "depengine_engine_destroy";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  // The destructor waits for every operation, the running one included.
  if (depengine::EngineCore::in_operation()) {
    return fail(DEPENGINE_ERROR_BAD_STATE, call, "called from inside an operation; this would deadlock the engine");
  }
  delete engine;
  return DEPENGINE_OK;
}

depengine_status depengine_engine_cpu_threads(const depengine_engine* engine, int* threads) noexcept {
  constexpr const char* call = "depengine_engine_cpu_threads";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (threads == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  *threads = engine->engine.cpu_threads();
  return DEPENGINE_OK;
}

// ---------------------------------------------------------------- variables

depengine_status depengine_new_var(depengine_engine* engine, const char* name, depengine_var* var) noexcept {
  constexpr const char* call = "depengine_new_var";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (var == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  try {
    const Var created = engine->engine.new_var(name != nullptr ? name : "");
    *var = encode(created);
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_delete_var(depengine_engine* engine, depengine_var var, depengine_release_fn release,
                                      void* user_data) noexcept {
  constexpr const char* call = "depengine_delete_var";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  const std::optional<Var> cpp_var = decode(*engine, var);
  if (!cpp_var) return fail(DEPENGINE_ERROR_UNKNOWN_VAR, call, "not a variable of this engine");
  try {
    depengine::ReleaseFn on_release;
    if (release != nullptr) on_release = [release, user_data] { release(user_data); };
    engine->engine.delete_var(*cpp_var, std::move(on_release));
    return DEPENGINE_OK;
  } catch (...) {
    // The engine rejects only unknown variables with invalid_argument here.
    return status_of_current_exception(call, DEPENGINE_ERROR_UNKNOWN_VAR);
  }
}

// ---------------------------------------------------------------- operations

depengine_status depengine_push_options_init(depengine_push_options* options) noexcept {
  if (options == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, "depengine_push_options_init", "null options");
  options->struct_size = sizeof(depengine_push_options);
  options->priority = 0;
  options->name = nullptr;
  options->device_kind = DEPENGINE_DEVICE_CPU;
  options->device_index = 0;
  options->bytes = 0;
  return DEPENGINE_OK;
}

depengine_status depengine_push(depengine_engine* engine, depengine_op_fn fn, void* user_data,
                                const depengine_var* reads, size_t num_reads, const depengine_var* writes,
                                size_t num_writes, const depengine_push_options* options) noexcept {
  return checked_push(
      "depengine_push", engine, fn == nullptr, reads, num_reads, writes, num_writes, options,
      [&](std::span<const Var> cpp_reads, std::span<const Var> cpp_writes, const depengine::PushOptions& cpp_options) {
        engine->engine.push(
            [fn, user_data](depengine::RunContext& run) {
              depengine_op_context ctx{run, false, std::nullopt};
              try {
                fn(user_data, &ctx);
              } catch (...) {
                throw rewrap_current_exception();
              }
              if (ctx.failure) throw OpFailure(*ctx.failure);
            },
            cpp_reads, cpp_writes, cpp_options);
      });
}

depengine_status depengine_push_async(depengine_engine* engine, depengine_async_op_fn fn, void* user_data,
                                      const depengine_var* reads, size_t num_reads, const depengine_var* writes,
                                      size_t num_writes, const depengine_push_options* options) noexcept {
  return checked_push(
      "depengine_push_async", engine, fn == nullptr, reads, num_reads, writes, num_writes, options,
      [&](std::span<const Var> cpp_reads, std::span<const Var> cpp_writes, const depengine::PushOptions& cpp_options) {
        engine->engine.push_async(
            [fn, user_data](depengine::RunContext& run, Completion done) {
              depengine_completion handle = 0;
              try {
                handle = completions().add(std::move(done));
              } catch (...) {
                if (done) done(std::make_exception_ptr(rewrap_current_exception()));
                return;
              }
              depengine_op_context ctx{run, true, std::nullopt};
              try {
                fn(user_data, &ctx, handle);
              } catch (...) {
                // Fail the operation with what was thrown, unless the function
                // completed it before throwing.
                if (std::optional<Completion> pending = completions().take(handle)) {
                  (*pending)(std::make_exception_ptr(rewrap_current_exception()));
                }
              }
            },
            cpp_reads, cpp_writes, cpp_options);
      });
}

depengine_status depengine_complete(depengine_completion done, const char* error_message) noexcept {
  constexpr const char* call = "depengine_complete";
  try {
    std::optional<Completion> pending = completions().take(done);
    if (!pending) {
      return fail(DEPENGINE_ERROR_BAD_STATE, call,
                  "this completion was already called, or is not a completion handle");
    }
    (*pending)(error_message != nullptr ? std::make_exception_ptr(OpFailure(error_message)) : nullptr);
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_op_fail(depengine_op_context* ctx, const char* message) noexcept {
  constexpr const char* call = "depengine_op_fail";
  if (ctx == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null context");
  if (ctx->async) {
    return fail(DEPENGINE_ERROR_BAD_STATE, call,
                "an asynchronous operation reports its failure through depengine_complete");
  }
  try {
    ctx->failure.emplace(message != nullptr ? message : "operation failed");
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_op_device(const depengine_op_context* ctx, depengine_device_kind* kind, int* index) noexcept {
  if (ctx == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, "depengine_op_device", "null context");
  if (kind != nullptr) *kind = static_cast<depengine_device_kind>(ctx->run.device.kind);
  if (index != nullptr) *index = ctx->run.device.index;
  return DEPENGINE_OK;
}

depengine_status depengine_op_stream(const depengine_op_context* ctx, void** stream) noexcept {
  constexpr const char* call = "depengine_op_stream";
  if (ctx == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null context");
  if (stream == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  *stream = ctx->run.stream;
  return DEPENGINE_OK;
}

// ---------------------------------------------------------------- waiting

depengine_status depengine_wait_to_read(depengine_engine* engine, depengine_var var) noexcept {
  constexpr const char* call = "depengine_wait_to_read";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  const std::optional<Var> cpp_var = decode(*engine, var);
  if (!cpp_var) return fail(DEPENGINE_ERROR_UNKNOWN_VAR, call, "not a variable of this engine");
  try {
    engine->engine.wait_to_read(*cpp_var);
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call, DEPENGINE_ERROR_UNKNOWN_VAR);
  }
}

depengine_status depengine_wait_to_write(depengine_engine* engine, depengine_var var) noexcept {
  constexpr const char* call = "depengine_wait_to_write";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  const std::optional<Var> cpp_var = decode(*engine, var);
  if (!cpp_var) return fail(DEPENGINE_ERROR_UNKNOWN_VAR, call, "not a variable of this engine");
  try {
    engine->engine.wait_to_write(*cpp_var);
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call, DEPENGINE_ERROR_UNKNOWN_VAR);
  }
}

depengine_status depengine_wait_all(depengine_engine* engine) noexcept {
  constexpr const char* call = "depengine_wait_all";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  try {
    engine->engine.wait_all();
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

// ---------------------------------------------------------------- graphs

depengine_status depengine_capture_begin(depengine_engine* engine) noexcept {
  constexpr const char* call = "depengine_capture_begin";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  try {
    engine->engine.core().capture_begin();
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_capture_end(depengine_engine* engine, depengine_graph** graph) noexcept {
  constexpr const char* call = "depengine_capture_end";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (graph == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  try {
    depengine::Graph captured(engine->engine.core().capture_end());
    *graph = new depengine_graph{engine, std::move(captured)};
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_replay(depengine_engine* engine, const depengine_graph* graph,
                                  const depengine_push_options* options) noexcept {
  constexpr const char* call = "depengine_replay";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (graph == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null graph");
  if (graph->engine != engine) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "a graph of another engine");
  depengine::PushOptions cpp_options;
  if (options != nullptr) {
    if (!push_options_initialized(*options)) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call,
                  "push options not initialized with depengine_push_options_init");
    }
    if (raw_enum(options->device_kind) != DEPENGINE_DEVICE_CPU) {
      return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "a replay is placed on the CPU");
    }
    cpp_options.priority = options->priority;
    if (options->name != nullptr) cpp_options.name = options->name;
  }
  try {
    engine->engine.replay(graph->graph, cpp_options);
    return DEPENGINE_OK;
  } catch (...) {
    // What remains for the engine to reject with invalid_argument is a deleted variable.
    return status_of_current_exception(call, DEPENGINE_ERROR_UNKNOWN_VAR);
  }
}

depengine_status depengine_graph_size(const depengine_graph* graph, size_t* size) noexcept {
  constexpr const char* call = "depengine_graph_size";
  if (graph == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null graph");
  if (size == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null output pointer");
  *size = graph->graph.size();
  return DEPENGINE_OK;
}

depengine_status depengine_graph_free(depengine_graph* graph) noexcept {
  delete graph;
  return DEPENGINE_OK;
}

// ---------------------------------------------------------------- profiler


depengine_status depengine_profiler_start(depengine_engine* engine) noexcept {
  constexpr const char* call = "depengine_profiler_start";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  try {
    if (!depengine::Profiler::available()) {
      return fail(DEPENGINE_ERROR_NOT_AVAILABLE, call,
                  "the profiler's hooks were compiled out of this build (DEPENGINE_PROFILER_HOOKS=OFF)");
    }
    std::lock_guard lock(engine->profiler_mutex);
    if (!engine->profiler) engine->profiler = std::make_unique<depengine::Profiler>(engine->engine);
    engine->profiler->start();  // std::logic_error: DEPENGINE_PROFILE already records this engine
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_profiler_stop(depengine_engine* engine) noexcept {
  constexpr const char* call = "depengine_profiler_stop";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  try {
    std::lock_guard lock(engine->profiler_mutex);
    if (engine->profiler) engine->profiler->stop();
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}

depengine_status depengine_profiler_dump(depengine_engine* engine, const char* path) noexcept {
  constexpr const char* call = "depengine_profiler_dump";
  if (engine == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null engine");
  if (path == nullptr) return fail(DEPENGINE_ERROR_INVALID_ARGUMENT, call, "null path");
  try {
    std::lock_guard lock(engine->profiler_mutex);
    if (!engine->profiler) {
      return fail(DEPENGINE_ERROR_BAD_STATE, call, "nothing recorded: call depengine_profiler_start first");
    }
    try {
      engine->profiler->write_trace(path);
    } catch (const std::runtime_error& e) {  // the file cannot be written
      return fail(DEPENGINE_ERROR_IO, with_call(call, e.what()));
    }
    return DEPENGINE_OK;
  } catch (...) {
    return status_of_current_exception(call);
  }
}


}  // extern "C"
