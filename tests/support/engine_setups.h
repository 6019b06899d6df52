#pragma once
// The engines the contract tests run on: the threaded engine, the same
// beside busy neighbours (the process's verdict pinned, PinnedNeighbours:
// the ops a frontend's pushes make ready are held for it,
// engine/held_ops.h), and the naive engine, the reference.
//
//   class Semantics : public EngineSetupTest {};
//   INSTANTIATE_TEST_SUITE_P(Engines, Semantics, kEngineSetups, engine_setup_name);
//   TEST_P(Semantics, X) { Engine engine({.kind = kind()}); ... }

#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>

#include <depengine/engine.h>

#include "tests/support/pinned_neighbours.h"

struct EngineSetup {
  depengine::EngineKind kind;
  bool busy_neighbours;
  const char* name;
};

inline const auto kEngineSetups =
    ::testing::Values(EngineSetup{depengine::EngineKind::Threaded, false, "Threaded"},
                      EngineSetup{depengine::EngineKind::Threaded, true, "ThreadedBesideBusyNeighbours"},
                      EngineSetup{depengine::EngineKind::Naive, false, "Naive"});

inline std::string engine_setup_name(const ::testing::TestParamInfo<EngineSetup>& info) { return info.param.name; }
inline void PrintTo(const EngineSetup& setup, std::ostream* os) { *os << setup.name; }

class EngineSetupTest : public ::testing::TestWithParam<EngineSetup> {
 protected:
  void SetUp() override {
    if (GetParam().busy_neighbours) neighbours_.emplace(true);
  }
  void TearDown() override { neighbours_.reset(); }
  depengine::EngineKind kind() const { return GetParam().kind; }

 private:
  std::optional<PinnedNeighbours> neighbours_;
};
