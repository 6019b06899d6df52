#pragma once
/// \file completion.h
/// `Completion`: how an asynchronous operation says it is done.
///
/// `Engine::push_async` hands the operation a `Completion`. Call it exactly
/// once, from any thread, when the work is done — with an exception to report
/// a failure. A second call throws `std::logic_error`. Dropping a Completion
/// that was never called completes the operation with a `std::logic_error`, so
/// a lost callback shows up as an error instead of a hang.
///
/// \code
///   engine.push_async([&io](depengine::RunContext&, depengine::Completion done) {
///     io.read_async(buffer, [done = std::move(done)](bool ok) mutable {
///       if (ok) done();
///       else done(std::make_exception_ptr(std::runtime_error("read failed")));
///     });
///   }, {}, {buffer_var});
/// \endcode

#include <cstdint>
#include <exception>

namespace depengine {

namespace detail {
struct OpBlock;
}

class Completion {
 public:
  Completion() = default;
  Completion(Completion&& other) noexcept;
  Completion& operator=(Completion&& other) noexcept;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;
  ~Completion();

  /// Completes the operation; `error` marks it failed. Throws
  /// `std::logic_error` when called a second time or on an empty Completion.
  void operator()(std::exception_ptr error = nullptr);

  /// False for a moved-from or already called Completion.
  explicit operator bool() const { return op_ != nullptr; }

  // For the engine.
  Completion(detail::OpBlock* op, std::uint64_t ticket) : op_(op), ticket_(ticket) {}

 private:
  detail::OpBlock* op_ = nullptr;
  std::uint64_t ticket_ = 0;
};

}  // namespace depengine
