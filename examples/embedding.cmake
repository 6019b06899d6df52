# Examples of embedding depengine (docs/embedding.md); each one is run by ctest
# and exits non-zero when its results are wrong.

# The C API from C: compiled as strict C99, so c_api.h must stay plain C.
add_executable(embedding_c_pipeline embedding_c_pipeline.c)
set_target_properties(embedding_c_pipeline PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(embedding_c_pipeline PRIVATE -Wall -Wextra -Wpedantic -Werror)
target_link_libraries(embedding_c_pipeline PRIVATE depengine Threads::Threads)
add_test(NAME embedding_c_pipeline COMMAND embedding_c_pipeline)

# A device backed by a thread pool the framework owns.
add_executable(embedding_custom_device embedding_custom_device.cpp)
target_link_libraries(embedding_custom_device PRIVATE depengine)
add_test(NAME embedding_custom_device COMMAND embedding_custom_device)

# Python ctypes over the shared library. Not under a sanitizer: the Python
# interpreter does not load the sanitizer's runtime first.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND DEPENGINE_SANITIZE STREQUAL "")
  add_test(NAME embedding_ctypes
           COMMAND Python3::Interpreter ${CMAKE_CURRENT_SOURCE_DIR}/embedding_ctypes.py
                   $<TARGET_FILE:depengine::shared>)
endif()
