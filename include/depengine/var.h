#pragma once
/// \file var.h
/// `Var`: a handle to one engine variable.
///
/// A variable stands for a piece of state (a buffer, a file, a counter) that
/// operations declare they read or write; the engine orders operations by
/// these declarations alone. The handle is a small value: copy it freely.
/// Using a handle after `delete_var`, or with another engine, is rejected with
/// `std::invalid_argument`.
///
/// \code
///   depengine::Engine engine;
///   depengine::Var v = engine.new_var("weights");
///   engine.push([](depengine::RunContext&) { /* write the weights */ }, {}, {v});
///   engine.wait_to_read(v);
///   engine.delete_var(v);
/// \endcode

#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

namespace depengine {

class Var {
 public:
  Var() = default;  ///< a null handle; every engine rejects it

  bool is_null() const { return engine_id_ == 0; }
  friend bool operator==(Var, Var) = default;

  // The representation is public to the engine and the C API only.
  std::uint32_t engine_id() const { return engine_id_; }
  std::uint32_t slot() const { return slot_; }
  std::uint32_t generation() const { return generation_; }
  Var(std::uint32_t engine_id, std::uint32_t slot, std::uint32_t generation)
      : engine_id_(engine_id), slot_(slot), generation_(generation) {}

 private:
  std::uint32_t engine_id_ = 0;
  std::uint32_t slot_ = 0;
  std::uint32_t generation_ = 0;
};

/// A non-owning list of variables: accepts `{a, b}`, a `std::vector<Var>` or
/// any contiguous range. It only lives for the duration of a call.
class VarList {
 public:
  VarList() = default;
  VarList(std::initializer_list<Var> vars) : vars_(vars.begin(), vars.size()) {}
  VarList(const std::vector<Var>& vars) : vars_(vars) {}
  VarList(std::span<const Var> vars) : vars_(vars) {}

  auto begin() const { return vars_.begin(); }
  auto end() const { return vars_.end(); }
  std::size_t size() const { return vars_.size(); }
  bool empty() const { return vars_.empty(); }
  const Var& operator[](std::size_t i) const { return vars_[i]; }

 private:
  std::span<const Var> vars_;
};

}  // namespace depengine
