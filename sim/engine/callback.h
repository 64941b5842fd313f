// A move-only `void()` callable for events, cheaper than std::function on the engine's hot
// path: a callable that is trivially copyable and fits in 24 bytes (a lambda capturing `this`
// and a few indices, the common case) is stored inline and moved by copying bytes; anything
// else is moved to the heap once. Invoking costs one indirect call; there is no manager call
// on move.
#pragma once

#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace megasim {

class Callback {
 public:
  Callback() = default;

  template <typename F,
            typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, Callback>>>
  Callback(F&& f) {  // NOLINT(google-explicit-constructor): lambdas convert implicitly
    using Fn = std::decay_t<F>;
    if constexpr (sizeof(Fn) <= kInline && std::is_trivially_copyable_v<Fn> &&
                  alignof(Fn) <= alignof(std::max_align_t)) {
      ::new (static_cast<void*>(buf_)) Fn(std::forward<F>(f));
      invoke_ = [](void* p) { (*static_cast<Fn*>(p))(); };
    } else {
      Fn* heap = new Fn(std::forward<F>(f));
      std::memcpy(buf_, &heap, sizeof heap);
      invoke_ = [](void* p) {
        Fn* fn;
        std::memcpy(&fn, p, sizeof fn);
        (*fn)();
      };
      destroy_ = [](void* p) {
        Fn* fn;
        std::memcpy(&fn, p, sizeof fn);
        delete fn;
      };
    }
  }

  Callback(Callback&& o) noexcept { take(o); }
  Callback& operator=(Callback&& o) noexcept {
    if (this != &o) {
      reset();
      take(o);
    }
    return *this;
  }
  Callback(const Callback&) = delete;
  Callback& operator=(const Callback&) = delete;
  ~Callback() { reset(); }

  explicit operator bool() const { return invoke_ != nullptr; }
  void operator()() { invoke_(buf_); }

  void reset() {
    if (destroy_) destroy_(buf_);
    invoke_ = nullptr;
    destroy_ = nullptr;
  }

 private:
  static constexpr std::size_t kInline = 24;

  void take(Callback& o) {
    std::memcpy(buf_, o.buf_, kInline);
    invoke_ = o.invoke_;
    destroy_ = o.destroy_;
    o.invoke_ = nullptr;
    o.destroy_ = nullptr;
  }

  alignas(std::max_align_t) unsigned char buf_[kInline];
  void (*invoke_)(void*) = nullptr;
  void (*destroy_)(void*) = nullptr;
};

}  // namespace megasim
