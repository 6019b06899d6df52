// The C API's graphs: capture_begin / capture_end, replay, graph_free, with
// their status codes.

#include <gtest/gtest.h>

#include <string>

#include <depengine/c_api.h>

namespace {

struct Counter {
  int value = 0;
};

void add_one(void* data, depengine_op_context*) { ++static_cast<Counter*>(data)->value; }
void double_it(void* data, depengine_op_context*) { static_cast<Counter*>(data)->value *= 2; }
void fail_op(void* data, depengine_op_context* ctx) {
  ++static_cast<Counter*>(data)->value;
  depengine_op_fail(ctx, "replayed op failed");
}

class GraphCApi : public ::testing::Test {
 protected:
  void SetUp() override {
    depengine_engine_options options;
    depengine_engine_options_init(&options);
    options.read_environment = 0;
    ASSERT_EQ(depengine_engine_create(&options, &engine), DEPENGINE_OK);
    ASSERT_EQ(depengine_new_var(engine, "x", &x), DEPENGINE_OK);
  }
  void TearDown() override { depengine_engine_destroy(engine); }

  depengine_engine* engine = nullptr;
  depengine_var x = DEPENGINE_NULL_VAR;
};

TEST_F(GraphCApi, CaptureAndReplay) {
  Counter c;
  ASSERT_EQ(depengine_capture_begin(engine), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine, add_one, &c, nullptr, 0, &x, 1, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine, double_it, &c, nullptr, 0, &x, 1, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_ERROR_BAD_STATE);  // inside the capture
  depengine_graph* graph = nullptr;
  ASSERT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_OK);
  size_t size = 0;
  ASSERT_EQ(depengine_graph_size(graph, &size), DEPENGINE_OK);
  EXPECT_EQ(size, 2u);
  ASSERT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_OK);
  EXPECT_EQ(c.value, 0);  // recorded, not run
  for (int i = 0; i < 3; ++i) ASSERT_EQ(depengine_replay(engine, graph, nullptr), DEPENGINE_OK);
  ASSERT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_OK);
  EXPECT_EQ(c.value, 14);
  EXPECT_EQ(depengine_graph_free(graph), DEPENGINE_OK);
  EXPECT_EQ(depengine_graph_free(nullptr), DEPENGINE_OK);
}

TEST_F(GraphCApi, MisuseGetsStatusCodes) {
  depengine_graph* graph = nullptr;
  EXPECT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(depengine_capture_begin(nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(depengine_capture_begin(engine), DEPENGINE_OK);
  EXPECT_EQ(depengine_capture_begin(engine), DEPENGINE_ERROR_BAD_STATE);
  EXPECT_EQ(depengine_capture_end(engine, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_OK);
  EXPECT_EQ(depengine_replay(engine, nullptr, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(depengine_replay(nullptr, graph, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);

  depengine_engine* other = nullptr;
  ASSERT_EQ(depengine_engine_create(nullptr, &other), DEPENGINE_OK);
  EXPECT_EQ(depengine_replay(other, graph, nullptr), DEPENGINE_ERROR_INVALID_ARGUMENT);
  depengine_engine_destroy(other);

  depengine_push_options options;
  depengine_push_options_init(&options);
  options.device_kind = DEPENGINE_DEVICE_CUDA;
  EXPECT_EQ(depengine_replay(engine, graph, &options), DEPENGINE_ERROR_INVALID_ARGUMENT);
  depengine_graph_free(graph);
}

TEST_F(GraphCApi, DeletingAnOutsideVariableFailsTheCaptureAndEndsIt) {
  ASSERT_EQ(depengine_capture_begin(engine), DEPENGINE_OK);
  ASSERT_EQ(depengine_delete_var(engine, x, nullptr, nullptr), DEPENGINE_OK);
  depengine_graph* graph = nullptr;
  EXPECT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(graph, nullptr);
  EXPECT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_ERROR_UNKNOWN_VAR);  // deleted, capture over
  EXPECT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_ERROR_BAD_STATE);
}

TEST_F(GraphCApi, ReplayAfterItsVariableWasDeletedIsAnUnknownVar) {
  Counter c;
  ASSERT_EQ(depengine_capture_begin(engine), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine, add_one, &c, &x, 1, nullptr, 0, nullptr), DEPENGINE_OK);
  depengine_graph* graph = nullptr;
  ASSERT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_OK);
  ASSERT_EQ(depengine_delete_var(engine, x, nullptr, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_replay(engine, graph, nullptr), DEPENGINE_ERROR_UNKNOWN_VAR);
  EXPECT_NE(std::string(depengine_last_error()).find("depengine_replay"), std::string::npos);
  ASSERT_EQ(depengine_wait_all(engine), DEPENGINE_OK);
  EXPECT_EQ(c.value, 0);
  depengine_graph_free(graph);
}

TEST_F(GraphCApi, AFailedReplayedOpIsReportedByTheWait) {
  Counter c;
  ASSERT_EQ(depengine_capture_begin(engine), DEPENGINE_OK);
  ASSERT_EQ(depengine_push(engine, fail_op, &c, nullptr, 0, &x, 1, nullptr), DEPENGINE_OK);
  depengine_graph* graph = nullptr;
  ASSERT_EQ(depengine_capture_end(engine, &graph), DEPENGINE_OK);
  ASSERT_EQ(depengine_replay(engine, graph, nullptr), DEPENGINE_OK);
  EXPECT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_STREQ(depengine_last_error(), "replayed op failed");
  ASSERT_EQ(depengine_replay(engine, graph, nullptr), DEPENGINE_OK);  // still usable
  EXPECT_EQ(depengine_wait_to_read(engine, x), DEPENGINE_ERROR_OPERATION_FAILED);
  EXPECT_EQ(c.value, 2);
  depengine_graph_free(graph);
}

}  // namespace
