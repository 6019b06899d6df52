#pragma once
// A move-only `std::function` that stores small callables inline, so that
// pushing an operation whose closure fits (the usual case: a few captured
// pointers) allocates nothing.

#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace depengine::detail {

template <class Signature, std::size_t InlineBytes = 48>
class InlineFunction;

template <class R, class... Args, std::size_t InlineBytes>
class InlineFunction<R(Args...), InlineBytes> {
 public:
  InlineFunction() = default;
  InlineFunction(std::nullptr_t) {}

  template <class F, class D = std::decay_t<F>,
            class = std::enable_if_t<!std::is_same_v<D, InlineFunction> &&
                                     std::is_invocable_r_v<R, D&, Args...>>>
  InlineFunction(F&& f) {
    // A null function pointer or an empty std::function gives an empty InlineFunction.
    if constexpr (std::is_constructible_v<bool, const D&>) {
      if (!static_cast<bool>(f)) return;
    }
    if constexpr (fits_inline<D>) {
      ::new (static_cast<void*>(storage_)) D(std::forward<F>(f));
      ops_ = &inline_ops<D>;
    } else {
      heap_ = new D(std::forward<F>(f));
      ops_ = &heap_ops<D>;
    }
  }

  InlineFunction(InlineFunction&& other) noexcept { take(other); }
  InlineFunction& operator=(InlineFunction&& other) noexcept {
    if (this != &other) {
      reset();
      take(other);
    }
    return *this;
  }
  InlineFunction(const InlineFunction&) = delete;
  InlineFunction& operator=(const InlineFunction&) = delete;
  ~InlineFunction() { reset(); }

  explicit operator bool() const { return ops_ != nullptr; }

  R operator()(Args... args) { return ops_->call(target(), std::forward<Args>(args)...); }

  void reset() {
    if (ops_) {
      ops_->destroy(target());
      ops_ = nullptr;
    }
  }

 private:
  struct Ops {
    R (*call)(void*, Args&&...);
    void (*destroy)(void*);
    void (*relocate)(void* from, void* to);  // inline storage only
  };

  template <class D>
  static constexpr bool fits_inline = sizeof(D) <= InlineBytes &&
                                      alignof(D) <= alignof(std::max_align_t) &&
                                      std::is_nothrow_move_constructible_v<D>;

  template <class D>
  static constexpr Ops inline_ops = {
      [](void* p, Args&&... a) -> R { return (*static_cast<D*>(p))(std::forward<Args>(a)...); },
      [](void* p) { static_cast<D*>(p)->~D(); },
      [](void* from, void* to) {
        ::new (to) D(std::move(*static_cast<D*>(from)));
        static_cast<D*>(from)->~D();
      }};

  template <class D>
  static constexpr Ops heap_ops = {
      [](void* p, Args&&... a) -> R { return (*static_cast<D*>(p))(std::forward<Args>(a)...); },
      [](void* p) { delete static_cast<D*>(p); }, nullptr};

  void* target() { return ops_->relocate ? static_cast<void*>(storage_) : heap_; }

  void take(InlineFunction& other) noexcept {
    ops_ = other.ops_;
    if (!ops_) return;
    if (ops_->relocate) {
      ops_->relocate(other.storage_, storage_);
    } else {
      heap_ = other.heap_;
    }
    other.ops_ = nullptr;
  }

  const Ops* ops_ = nullptr;
  union {
    alignas(std::max_align_t) unsigned char storage_[InlineBytes];
    void* heap_;
  };
};

}  // namespace depengine::detail
