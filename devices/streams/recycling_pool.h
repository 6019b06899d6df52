#pragma once
// RecyclingPool<T>: hands out objects (device events) as shared_ptr whose
// last copy returns the object to the pool instead of destroying it.
//
// A Fence holds such a shared_ptr, so an event stays out of the pool while
// any operation may still wait on it. The deleter keeps the pool alive, so a
// fence released after its device was destroyed is still safe.
//
// Thread safety: acquire and the deleter may run on any threads at once.

#include <functional>
#include <memory>
#include <mutex>
#include <vector>

namespace depengine::detail {

template <class T>
class RecyclingPool : public std::enable_shared_from_this<RecyclingPool<T>> {
 public:
  /// `create` makes a new object (it may throw); `recycle` readies a returned
  /// one for its next use; `destroy` frees one when the pool goes away.
  static std::shared_ptr<RecyclingPool> make(std::function<T*()> create, std::function<void(T*)> recycle,
                                             std::function<void(T*)> destroy) {
    return std::shared_ptr<RecyclingPool>(
        new RecyclingPool(std::move(create), std::move(recycle), std::move(destroy)));
  }

  ~RecyclingPool() {
    for (T* object : free_) destroy_(object);
  }

  std::shared_ptr<T> acquire() {
    T* object = nullptr;
    {
      std::lock_guard lock(mutex_);
      if (!free_.empty()) {
        object = free_.back();
        free_.pop_back();
      }
    }
    if (object == nullptr) object = create_();
    return std::shared_ptr<T>(object, GiveBack{this->shared_from_this()});
  }

 private:
  RecyclingPool(std::function<T*()> create, std::function<void(T*)> recycle, std::function<void(T*)> destroy)
      : create_(std::move(create)), recycle_(std::move(recycle)), destroy_(std::move(destroy)) {}

  struct GiveBack {
    std::shared_ptr<RecyclingPool> pool;
    void operator()(T* object) const { pool->give_back(object); }
  };

  void give_back(T* object) {
    recycle_(object);
    std::lock_guard lock(mutex_);
    free_.push_back(object);
  }

  std::function<T*()> create_;
  std::function<void(T*)> recycle_;
  std::function<void(T*)> destroy_;
  std::mutex mutex_;
  std::vector<T*> free_;
};

}  // namespace depengine::detail
