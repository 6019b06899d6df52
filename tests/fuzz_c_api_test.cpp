// A seeded random driver of the C API: each seed is a random sequence of
// engine calls — valid ones, and misuse (null or forged arguments, handles
// that were deleted, belong to another engine or were never created,
// duplicates, bad devices and options) — run on a threaded and on a naive
// engine. A model kept here (docs/semantics.md) says what each call must
// return: which variables are live, which failure marks which variable,
// which failures were reported; each operation computes a value of the
// variables it writes, so the model also gives every value a successful
// wait must show. Both engines must agree with the model, hence with each
// other.
//
// Bounded: DEPENGINE_FUZZ_SECONDS (default 3) per test, at least
// kMinSeeds seeds; DEPENGINE_FUZZ_SEED=N runs only seed N (a failure
// prints its seed and the step it failed at).

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "depengine/c_api.h"

namespace {

constexpr int kMinSeeds = 8;
constexpr int kStepsPerSeed = 300;
constexpr std::size_t kMaxLiveVars = 12;

std::string last_error() { return depengine_last_error(); }

/// What the seeds exercised, so that a run that checked nothing fails.
struct Coverage {
  int ops = 0, failed_ops = 0, skipped_ops = 0, rejected_calls = 0, failed_waits = 0, deletes = 0;
};
Coverage g_coverage;

double fuzz_seconds() {
  const char* text = std::getenv("DEPENGINE_FUZZ_SECONDS");
  return text != nullptr && *text != '\0' ? std::atof(text) : 3.0;
}

std::optional<std::uint64_t> only_seed() {
  const char* text = std::getenv("DEPENGINE_FUZZ_SEED");
  if (text == nullptr || *text == '\0') return std::nullopt;
  return std::strtoull(text, nullptr, 10);
}

std::uint64_t mix(std::uint64_t h, std::uint64_t x) {
  h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

// ---------------------------------------------------------------- completions from elsewhere

/// Completes asynchronous operations from its own thread, in the order handed.
class Completer {
 public:
  Completer() : thread_([this] { loop(); }) {}
  ~Completer() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  void complete_later(depengine_completion done, std::string error) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back({done, std::move(error)});
    }
    wake_.notify_one();
  }
  int wrong_statuses() const { return wrong_.load(); }

 private:
  void loop() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;
      auto [done, error] = std::move(queue_.front());
      queue_.pop_front();
      lock.unlock();
      if (depengine_complete(done, error.empty() ? nullptr : error.c_str()) != DEPENGINE_OK) ++wrong_;
      // Completing twice is refused.
      if (depengine_complete(done, nullptr) != DEPENGINE_ERROR_BAD_STATE) ++wrong_;
      lock.lock();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<depengine_completion, std::string>> queue_;
  std::atomic<int> wrong_{0};
  bool stop_ = false;
  std::thread thread_;
};

// ---------------------------------------------------------------- what operations do

/// A variable's storage; shared by the model and the operations.
struct Cell {
  std::uint64_t value = 0;
  std::atomic<bool> released{false};
  std::atomic<int> releases{0};
};

/// What one operation does when it runs. Kept alive until its engine is destroyed.
struct OpRecord {
  std::uint64_t id = 0;
  std::vector<Cell*> reads, writes;
  std::string failure;  // "": succeeds
  enum class How { fail_call, throw_exception, complete_inline, complete_later } how = How::fail_call;
  bool try_blocking_inside = false;  // also checks that a blocking call inside is refused
  depengine_engine* engine = nullptr;
  depengine_var some_var = DEPENGINE_NULL_VAR;
  Completer* completer = nullptr;
  std::atomic<int>* violations = nullptr;  // ran after a release, twice, or a blocking call was allowed
  std::atomic<int> runs{0};
};

void apply(OpRecord& op) {
  if (op.runs.fetch_add(1) != 0) op.violations->fetch_add(1);
  for (Cell* c : op.reads) {
    if (c->released.load()) op.violations->fetch_add(1);
  }
  for (Cell* c : op.writes) {
    if (c->released.load()) op.violations->fetch_add(1);
  }
  if (op.try_blocking_inside) {
    if (depengine_wait_to_read(op.engine, op.some_var) != DEPENGINE_ERROR_BAD_STATE) op.violations->fetch_add(1);
    if (depengine_wait_all(op.engine) != DEPENGINE_ERROR_BAD_STATE) op.violations->fetch_add(1);
    if (depengine_engine_destroy(op.engine) != DEPENGINE_ERROR_BAD_STATE) op.violations->fetch_add(1);
  }
  if (!op.failure.empty()) return;  // a failing operation changes nothing
  std::uint64_t in = op.id;
  for (Cell* c : op.reads) in = mix(in, c->value);
  for (std::size_t i = 0; i < op.writes.size(); ++i) op.writes[i]->value = mix(mix(in, i), op.writes[i]->value);
}

void run_sync(void* data, depengine_op_context* ctx) {
  auto& op = *static_cast<OpRecord*>(data);
  apply(op);
  if (op.failure.empty()) return;
  if (op.how == OpRecord::How::throw_exception) throw std::runtime_error(op.failure);
  depengine_op_fail(ctx, op.failure.c_str());
}

void run_async(void* data, depengine_op_context* ctx, depengine_completion done) {
  auto& op = *static_cast<OpRecord*>(data);
  apply(op);
  // An asynchronous operation reports failure through its completion only.
  if (depengine_op_fail(ctx, "not allowed") != DEPENGINE_ERROR_BAD_STATE) op.violations->fetch_add(1);
  if (op.how == OpRecord::How::complete_later) {
    op.completer->complete_later(done, op.failure);
    return;
  }
  depengine_complete(done, op.failure.empty() ? nullptr : op.failure.c_str());
}

void release_cell(void* data) {
  auto* cell = static_cast<Cell*>(data);
  cell->released.store(true);
  cell->releases.fetch_add(1);
}

// ---------------------------------------------------------------- the model

/// Handles of engines that are gone: never variables of any later engine.
std::vector<depengine_var>& graveyard() {
  static std::vector<depengine_var> handles;
  return handles;
}

class FuzzRun {
 public:
  FuzzRun(std::uint64_t seed, depengine_engine_kind kind) : rng_(seed), forge_rng_(~seed), kind_(kind) {}

  /// The run's outcome: every variable's final value, in creation order.
  std::vector<std::uint64_t> go() {
    create_engines();
    for (step_ = 0; step_ < kStepsPerSeed && !::testing::Test::HasFatalFailure(); ++step_) one_step();
    finish();
    std::vector<std::uint64_t> values;
    for (const auto& cell : cells_) values.push_back(cell->value);
    return values;
  }

 private:
  struct VarModel {
    depengine_var handle;
    Cell* cell;
    bool live = true;
    std::optional<int> mark;  // the failure that marks it, unreported for this variable
  };
  struct FailureModel {
    std::string message;
    bool reported = false;
    bool attached = false;  // wrote a variable when it happened
  };

  std::string where() const {
    return std::string(kind_ == DEPENGINE_ENGINE_NAIVE ? "naive" : "threaded") + " step " + std::to_string(step_);
  }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }
  // For forged handles only: their values differ between engines, and so
  // may the draws they take, which must not change the sequence of calls.
  int pick_forged(int n) { return std::uniform_int_distribution<int>(0, n - 1)(forge_rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  void create_engines() {
    depengine_engine_options options;
    ASSERT_EQ(depengine_engine_options_init(&options), DEPENGINE_OK);
    options.kind = kind_;
    options.read_environment = 0;
    options.cpu_threads = pick(4);  // 0: one per core
    const std::size_t bounds[] = {1, 2, 7, 64, 65536};
    options.max_ops_in_flight = bounds[pick(5)];
    ASSERT_EQ(depengine_engine_create(&options, &engine_), DEPENGINE_OK) << last_error();
    ASSERT_EQ(depengine_new_var(engine_, "anchor", &anchor_), DEPENGINE_OK);
    ASSERT_EQ(depengine_engine_options_init(&options), DEPENGINE_OK);
    options.read_environment = 0;
    options.cpu_threads = 1;
    ASSERT_EQ(depengine_engine_create(&options, &foreign_), DEPENGINE_OK) << last_error();
    for (int i = 0; i < 4; ++i) {
      depengine_var v;
      ASSERT_EQ(depengine_new_var(foreign_, "foreign", &v), DEPENGINE_OK);
      foreign_vars_.push_back(v);
    }
  }

  void finish() {
    wait_all();
    EXPECT_EQ(depengine_engine_destroy(engine_), DEPENGINE_OK) << where();
    EXPECT_EQ(depengine_engine_destroy(foreign_), DEPENGINE_OK) << where();
    EXPECT_EQ(violations_.load(), 0) << where() << ": an op ran after its variable's release, ran twice, or a "
                                                   "blocking call inside an op was not refused";
    EXPECT_EQ(completer_wrong_(), 0) << where() << ": a depengine_complete returned the wrong status";
    for (const VarModel& v : vars_) {
      // Deleted variables were released once; live ones never (destroy drops them).
      EXPECT_EQ(v.cell->releases.load(), v.live ? 0 : 1) << where() << " handle " << v.handle;
    }
    for (const auto& op : ops_) {
      EXPECT_LE(op->runs.load(), 1) << where();
    }
    auto& dead = graveyard();
    for (const VarModel& v : vars_) dead.push_back(v.handle);
    for (depengine_var v : foreign_vars_) dead.push_back(v);
    if (dead.size() > 8192) dead.erase(dead.begin(), dead.begin() + static_cast<std::ptrdiff_t>(dead.size() - 8192));
  }

  int completer_wrong_() const { return completer_.wrong_statuses(); }

  std::vector<VarModel*> live_vars() {
    std::vector<VarModel*> live;
    for (VarModel& v : vars_) {
      if (v.live) live.push_back(&v);
    }
    return live;
  }

  bool is_live_handle(depengine_var h) const {
    return std::any_of(vars_.begin(), vars_.end(), [&](const VarModel& v) { return v.live && v.handle == h; });
  }

  /// A value that is not one of this engine's live handles: null, deleted,
  /// another engine's (live or gone), or forged from a live one.
  depengine_var bad_handle() {
    for (;;) {
      depengine_var h = DEPENGINE_NULL_VAR;
      switch (pick_forged(6)) {
        case 0:
          h = DEPENGINE_NULL_VAR;
          break;
        case 1: {  // deleted
          std::vector<depengine_var> dead;
          for (const VarModel& v : vars_) {
            if (!v.live) dead.push_back(v.handle);
          }
          if (dead.empty()) continue;
          h = dead[pick_forged(static_cast<int>(dead.size()))];
          break;
        }
        case 2:
          h = foreign_vars_[pick_forged(static_cast<int>(foreign_vars_.size()))];
          break;
        case 3:  // of an engine that is gone
          if (graveyard().empty()) continue;
          h = graveyard()[pick_forged(static_cast<int>(graveyard().size()))];
          break;
        case 4: {  // a live handle with one bit changed
          auto live = live_vars();
          if (live.empty()) continue;
          h = live[pick_forged(static_cast<int>(live.size()))]->handle ^ (std::uint64_t{1} << pick_forged(64));
          break;
        }
        default:
          h = std::uniform_int_distribution<std::uint64_t>()(forge_rng_);
          break;
      }
      if (!is_live_handle(h)) return h;
    }
  }

  void one_step() {
    const int what = pick(100);
    if (what < 8 || vars_.empty()) return new_var();
    if (what < 52) return push_valid();
    if (what < 68) return push_invalid();
    if (what < 76) return delete_var();
    if (what < 90) return wait_on_var();
    if (what < 95) return wait_all();
    return misuse_elsewhere();
  }

  void new_var() {
    if (live_vars().size() >= kMaxLiveVars) return push_valid();
    depengine_var v = DEPENGINE_NULL_VAR;
    const std::string name = "v" + std::to_string(vars_.size());
    ASSERT_EQ(depengine_new_var(engine_, chance(0.5) ? name.c_str() : nullptr, &v), DEPENGINE_OK) << where();
    ASSERT_NE(v, DEPENGINE_NULL_VAR);
    ASSERT_FALSE(is_live_handle(v)) << where() << ": a live handle was handed out again";
    cells_.push_back(std::make_unique<Cell>());
    vars_.push_back({v, cells_.back().get()});
  }

  /// Up to `max` distinct live variables, in random order.
  std::vector<VarModel*> some_vars(int max) {
    auto live = live_vars();
    std::shuffle(live.begin(), live.end(), rng_);
    live.resize(std::min<std::size_t>(live.size(), static_cast<std::size_t>(pick(max + 1))));
    return live;
  }

  void push_valid() {
    auto chosen = some_vars(4);
    const std::size_t num_reads = chosen.empty() ? 0 : static_cast<std::size_t>(pick(static_cast<int>(chosen.size()) + 1));
    std::vector<VarModel*> reads(chosen.begin(), chosen.begin() + static_cast<std::ptrdiff_t>(num_reads));
    std::vector<VarModel*> writes(chosen.begin() + static_cast<std::ptrdiff_t>(num_reads), chosen.end());

    // The model: skipped when a variable it touches failed (the first
    // listed, reads then writes, gives the error); else it runs.
    std::optional<int> input_failure;
    for (VarModel* v : reads) {
      if (!input_failure && v->mark) input_failure = v->mark;
    }
    for (VarModel* v : writes) {
      if (!input_failure && v->mark) input_failure = v->mark;
    }

    auto op = std::make_unique<OpRecord>();
    op->id = mix(0x5eed, ops_.size() + skipped_.size());
    for (VarModel* v : reads) op->reads.push_back(v->cell);
    for (VarModel* v : writes) op->writes.push_back(v->cell);
    const bool async = chance(0.3);
    // A skipped op never runs; if it did, its value would show the mistake.
    if (chance(0.12) && !input_failure) op->failure = "failure " + std::to_string(failures_.size()) + " at " + where();
    op->how = async ? (chance(0.5) ? OpRecord::How::complete_later : OpRecord::How::complete_inline)
                    : (chance(0.5) ? OpRecord::How::throw_exception : OpRecord::How::fail_call);
    op->try_blocking_inside = chance(0.03);
    op->engine = engine_;
    op->some_var = anchor_;
    op->completer = &completer_;
    op->violations = &violations_;

    std::vector<depengine_var> read_handles, write_handles;
    for (VarModel* v : reads) read_handles.push_back(v->handle);
    for (VarModel* v : writes) write_handles.push_back(v->handle);
    depengine_push_options options;
    depengine_push_options_init(&options);
    options.priority = pick(3) - 1;
    options.name = chance(0.5) ? "fuzz op" : nullptr;
    const depengine_push_options* opts = chance(0.5) ? &options : nullptr;
    const depengine_status status =
        async ? depengine_push_async(engine_, run_async, op.get(), read_handles.data(), read_handles.size(),
                                     write_handles.data(), write_handles.size(), opts)
              : depengine_push(engine_, run_sync, op.get(), read_handles.data(), read_handles.size(),
                               write_handles.data(), write_handles.size(), opts);
    if (status != DEPENGINE_OK) ops_.push_back(std::move(op));  // may not run, but must stay valid
    ASSERT_EQ(status, DEPENGINE_OK) << where() << ": " << last_error();

    ++g_coverage.ops;
    if (input_failure) {
      ++g_coverage.skipped_ops;
      skipped_.push_back(std::move(op));
      for (VarModel* v : writes) v->mark = input_failure;
      return;
    }
    if (!op->failure.empty()) {
      ++g_coverage.failed_ops;
      failures_.push_back({op->failure, false, !writes.empty()});
      for (VarModel* v : writes) v->mark = static_cast<int>(failures_.size()) - 1;
    } else {
      apply_to_model(*op, reads, writes);
    }
    ops_.push_back(std::move(op));
  }

  void apply_to_model(const OpRecord& op, const std::vector<VarModel*>& reads, const std::vector<VarModel*>& writes) {
    std::uint64_t in = op.id;
    for (VarModel* v : reads) in = mix(in, model_value(v));
    for (std::size_t i = 0; i < writes.size(); ++i) model_values_[writes[i]->cell] = mix(mix(in, i), model_value(writes[i]));
  }
  std::uint64_t model_value(VarModel* v) { return model_values_[v->cell]; }

  /// A push with exactly one thing wrong: rejected with its status, nothing runs.
  void push_invalid() {
    if (live_vars().empty()) return new_var();
    auto chosen = some_vars(3);
    std::vector<depengine_var> reads, writes;
    for (VarModel* v : chosen) (chance(0.5) ? reads : writes).push_back(v->handle);
    depengine_push_options options;
    depengine_push_options_init(&options);
    const depengine_push_options* opts = nullptr;
    depengine_engine* engine = engine_;
    bool null_fn = false;
    bool null_reads = false;
    depengine_status expected = DEPENGINE_ERROR_INVALID_ARGUMENT;
    switch (pick(8)) {
      case 0:
        null_fn = true;
        break;
      case 1:
        engine = nullptr;
        break;
      case 2:  // a null array with a count
        null_reads = true;
        if (reads.empty()) reads.push_back(DEPENGINE_NULL_VAR);
        break;
      case 3: {  // a duplicate, in one list or across both
        auto live = live_vars();
        const depengine_var dup = live[pick(static_cast<int>(live.size()))]->handle;
        reads.clear();
        writes.clear();
        for (VarModel* v : chosen) {
          if (v->handle != dup) (chance(0.5) ? reads : writes).push_back(v->handle);
        }
        (chance(0.5) ? reads : writes).push_back(dup);
        (chance(0.5) ? reads : writes).push_back(dup);
        break;
      }
      case 4: {  // a device kind that does not exist, or a device the engine does not have
        opts = &options;
        const int kinds[] = {-1, 4, 77, DEPENGINE_DEVICE_CPU, DEPENGINE_DEVICE_CUDA, DEPENGINE_DEVICE_EMULATED,
                             DEPENGINE_DEVICE_CUSTOM};
        const int kind = kinds[pick(7)];
        options.device_kind = static_cast<depengine_device_kind>(kind);
        // cpu:0 is the one device every engine has; cuda:1000 none.
        options.device_index = kind == DEPENGINE_DEVICE_CPU ? 1 + pick(8) : kind == DEPENGINE_DEVICE_CUDA ? 1000 : pick(3) - 1;
        break;
      }
      case 5:  // options not set up by their _init function
        opts = &options;
        options.struct_size = chance(0.5) ? 0 : sizeof options + 8;
        break;
      default: {  // one handle that is not a live variable of this engine
        expected = DEPENGINE_ERROR_UNKNOWN_VAR;
        (chance(0.5) ? reads : writes).push_back(bad_handle());
        if (reads.size() > 1 && chance(0.5)) std::swap(reads.front(), reads.back());
        break;
      }
    }
    std::atomic<int> ran{0};
    auto count = [](void* data, depengine_op_context*) { static_cast<std::atomic<int>*>(data)->fetch_add(1); };
    const depengine_status status =
        depengine_push(engine, null_fn ? nullptr : +count, &ran, null_reads ? nullptr : reads.data(), reads.size(), writes.data(), writes.size(), opts);
    // Accepted by mistake: let it finish before `ran` goes (the model is
    // off from here, the seed stops).
    if (status == DEPENGINE_OK) depengine_wait_all(engine_);
    ASSERT_EQ(status, expected) << where() << ": " << last_error();
    ++g_coverage.rejected_calls;
    EXPECT_FALSE(last_error().empty()) << where();
    EXPECT_EQ(ran.load(), 0) << where();
  }

  void delete_var() {
    if (chance(0.25)) {
      const depengine_var h = bad_handle();
      ASSERT_EQ(depengine_delete_var(engine_, h, release_cell, &sink_), DEPENGINE_ERROR_UNKNOWN_VAR)
          << where() << " handle " << std::hex << h << std::dec << ": " << last_error();
      return;
    }
    auto live = live_vars();
    if (live.empty()) return;
    VarModel* v = live[pick(static_cast<int>(live.size()))];
    ASSERT_EQ(depengine_delete_var(engine_, v->handle, release_cell, v->cell), DEPENGINE_OK) << where() << ": "
                                                                                             << last_error();
    v->live = false;  // its mark stays, for wait_all
    ++g_coverage.deletes;
  }

  void wait_on_var() {
    const bool for_write = chance(0.5);
    auto wait = [&](depengine_var h) {
      return for_write ? depengine_wait_to_write(engine_, h) : depengine_wait_to_read(engine_, h);
    };
    if (chance(0.2)) {
      const depengine_var h = bad_handle();
      ASSERT_EQ(wait(h), DEPENGINE_ERROR_UNKNOWN_VAR) << where() << " handle " << std::hex << h << std::dec << ": " << last_error();
      return;
    }
    auto live = live_vars();
    if (live.empty()) return;
    check_wait(*live[pick(static_cast<int>(live.size()))], wait);
  }

  template <class Wait>
  void check_wait(VarModel& v, Wait&& wait) {
    const depengine_status status = wait(v.handle);
    if (v.mark) {
      // A variable a failure marked reports it, even when another variable reported it already.
      ASSERT_EQ(status, DEPENGINE_ERROR_OPERATION_FAILED) << where() << " (" << failures_[*v.mark].message << ")";
      ++g_coverage.failed_waits;
      EXPECT_EQ(last_error(), failures_[*v.mark].message) << where();
      failures_[*v.mark].reported = true;
      v.mark.reset();
    } else {
      ASSERT_EQ(status, DEPENGINE_OK) << where() << ": " << last_error();
    }
    EXPECT_EQ(v.cell->value, model_value(&v)) << where() << ": a wait returned before the writes it covers";
  }

  void wait_all() {
    // Must: a failure that still marks a variable (live or deleted), or an
    // unreported one that wrote nothing. May: an unreported one every mark
    // of which a later failure replaced (reporting it is allowed, not required).
    std::set<int> must, may;
    for (const VarModel& v : vars_) {
      if (v.mark) must.insert(*v.mark);
    }
    for (int f = 0; f < static_cast<int>(failures_.size()); ++f) {
      if (failures_[f].reported || must.contains(f)) continue;
      (failures_[f].attached ? may : must).insert(f);
    }
    const depengine_status status = depengine_wait_all(engine_);
    if (must.empty() && may.empty()) {
      ASSERT_EQ(status, DEPENGINE_OK) << where() << ": " << last_error();
    } else if (!must.empty()) {
      ASSERT_EQ(status, DEPENGINE_ERROR_OPERATION_FAILED) << where() << ": " << must.size() << " unreported failures";
    } else {
      ASSERT_TRUE(status == DEPENGINE_OK || status == DEPENGINE_ERROR_OPERATION_FAILED) << where() << ": " << last_error();
    }
    if (status == DEPENGINE_ERROR_OPERATION_FAILED) {
      bool known = false;
      for (int f : must) known = known || failures_[f].message == last_error();
      for (int f : may) known = known || failures_[f].message == last_error();
      EXPECT_TRUE(known) << where() << ": wait_all reported '" << last_error() << "', not an unreported failure";
    }
    for (FailureModel& f : failures_) f.reported = true;
    for (VarModel& v : vars_) v.mark.reset();
    for (VarModel* v : live_vars()) EXPECT_EQ(v->cell->value, model_value(v)) << where();
  }


  /// This engine's handles on the other engine, and calls without an engine.
  void misuse_elsewhere() {
    auto live = live_vars();
    if (live.empty()) return;
    const depengine_var ours = live[pick(static_cast<int>(live.size()))]->handle;
    auto nothing = [](void*, depengine_op_context*) {};
    switch (pick(5)) {
      case 0:
        ASSERT_EQ(depengine_push(foreign_, nothing, nullptr, &ours, 1, nullptr, 0, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR)
            << where() << ": " << last_error();
        break;
      case 1:
        ASSERT_EQ(depengine_wait_to_read(foreign_, ours), DEPENGINE_ERROR_UNKNOWN_VAR) << where() << ": " << last_error();
        break;
      case 2:
        ASSERT_EQ(depengine_delete_var(foreign_, ours, nullptr, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR)
            << where() << ": " << last_error();
        break;
      case 3:
        ASSERT_EQ(depengine_wait_to_read(nullptr, ours), DEPENGINE_ERROR_INVALID_ARGUMENT) << where();
        break;
      default:
        ASSERT_EQ(depengine_delete_var(nullptr, ours, nullptr, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT) << where();
        break;
    }
    ASSERT_EQ(depengine_wait_all(foreign_), DEPENGINE_OK) << where() << ": " << last_error();
  }

  std::mt19937_64 rng_, forge_rng_;
  depengine_engine_kind kind_;
  int step_ = 0;
  depengine_engine* engine_ = nullptr;
  depengine_engine* foreign_ = nullptr;
  depengine_var anchor_ = DEPENGINE_NULL_VAR;  // never touched by an op nor deleted: blocking calls inside ops wait on it
  std::vector<depengine_var> foreign_vars_;
  std::vector<std::unique_ptr<Cell>> cells_;
  std::map<const Cell*, std::uint64_t> model_values_;
  std::deque<VarModel> vars_;
  std::vector<FailureModel> failures_;
  std::vector<std::unique_ptr<OpRecord>> ops_, skipped_;  // alive until the engine is destroyed
  Cell sink_;  // what a wrongly accepted delete would release
  std::atomic<int> violations_{0};
  Completer completer_;
};

}  // namespace

// Many seeds, each on both engines: every status as the model says, and the
// same values on both.
TEST(FuzzCApi, RandomSequencesFollowTheModelOnBothEngines) {
  const auto begin = std::chrono::steady_clock::now();
  const double budget = fuzz_seconds();
  int seeds = 0;
  for (std::uint64_t seed = only_seed().value_or(1);; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed) + " (rerun with DEPENGINE_FUZZ_SEED=" + std::to_string(seed) + ")");
    const std::vector<std::uint64_t> threaded = FuzzRun(seed, DEPENGINE_ENGINE_THREADED).go();
    if (HasFatalFailure()) return;
    const std::vector<std::uint64_t> naive = FuzzRun(seed, DEPENGINE_ENGINE_NAIVE).go();
    if (HasFatalFailure()) return;
    EXPECT_EQ(threaded, naive);
    ++seeds;
    if (only_seed() || HasFailure()) break;
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (seeds >= kMinSeeds && elapsed >= budget) break;
  }
  RecordProperty("seeds", seeds);
  if (HasFailure()) return;
  EXPECT_GT(g_coverage.ops, 100 * seeds);
  EXPECT_GT(g_coverage.failed_ops, seeds);
  EXPECT_GT(g_coverage.skipped_ops, seeds);
  EXPECT_GT(g_coverage.rejected_calls, 10 * seeds);
  EXPECT_GT(g_coverage.failed_waits, seeds);
  EXPECT_GT(g_coverage.deletes, 5 * seeds);
}

// Engine options at and beyond their bounds, in the C API: cpu_threads from
// 0 to 1024, max_ops_in_flight from 1 to SIZE_MAX (unlimited); anything else
// is an invalid argument, nothing is created.
TEST(FuzzCApi, EngineOptionsOutsideTheirBoundsAreRejected) {
  struct Case {
    int cpu_threads;
    std::size_t max_ops_in_flight;
    bool valid;
  };
  const Case cases[] = {
      {-1, 64, false},
      {-1000, 64, false},
      {INT32_MIN, 64, false},
      {1025, 64, false},
      {1 << 20, 64, false},
      {INT32_MAX, 64, false},
      {2, 0, false},
      {0, 1, true},
      {2, SIZE_MAX, true},                  // unlimited
      {1, std::size_t{1} << 63, true},      // beyond a signed 64-bit value
      {3, (std::size_t{1} << 63) + 5, true},
  };
  for (const Case& c : cases) {
    for (depengine_engine_kind kind : {DEPENGINE_ENGINE_THREADED, DEPENGINE_ENGINE_NAIVE}) {
      SCOPED_TRACE("cpu_threads " + std::to_string(c.cpu_threads) + ", max_ops_in_flight " +
                   std::to_string(c.max_ops_in_flight) + (kind == DEPENGINE_ENGINE_NAIVE ? ", naive" : ", threaded"));
      depengine_engine_options options;
      ASSERT_EQ(depengine_engine_options_init(&options), DEPENGINE_OK);
      options.kind = kind;
      options.read_environment = 0;
      options.cpu_threads = c.cpu_threads;
      options.max_ops_in_flight = c.max_ops_in_flight;
      depengine_engine* engine = nullptr;
      const depengine_status status = depengine_engine_create(&options, &engine);
      if (!c.valid) {
        EXPECT_EQ(status, DEPENGINE_ERROR_INVALID_ARGUMENT) << last_error();
        EXPECT_EQ(engine, nullptr);
        const bool names_it = last_error().find(c.max_ops_in_flight == 0 ? "max_ops_in_flight" : "cpu_threads") !=
                              std::string::npos;
        EXPECT_TRUE(names_it) << last_error();
        if (engine != nullptr) depengine_engine_destroy(engine);
        continue;
      }
      ASSERT_EQ(status, DEPENGINE_OK) << last_error();
      // Pushes more than a small bound would hold: an unlimited bound never holds one back.
      depengine_var v = DEPENGINE_NULL_VAR;
      ASSERT_EQ(depengine_new_var(engine, "v", &v), DEPENGINE_OK);
      std::atomic<int> ran{0};
      auto count = [](void* data, depengine_op_context*) { static_cast<std::atomic<int>*>(data)->fetch_add(1); };
      for (int i = 0; i < 1000; ++i) ASSERT_EQ(depengine_push(engine, count, &ran, nullptr, 0, &v, 1, nullptr), DEPENGINE_OK);
      EXPECT_EQ(depengine_wait_to_read(engine, v), DEPENGINE_OK) << last_error();
      EXPECT_EQ(ran.load(), 1000);
      EXPECT_EQ(depengine_engine_destroy(engine), DEPENGINE_OK);
    }
  }
}
