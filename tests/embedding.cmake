# Tests of embedding depengine in other frameworks (docs/embedding.md).

depengine_add_test(embedding_c_api_tests embedding_c_api_test.cpp)
depengine_add_test(embedding_external_ops_tests embedding_external_ops_test.cpp)
depengine_add_test(embedding_custom_device_tests embedding_custom_device_test.cpp)
# A seeded random driver of the C API against a model (DEPENGINE_FUZZ_SECONDS, default 3).
depengine_add_test(fuzz_c_api_tests fuzz_c_api_test.cpp)

# The package: install, then consume it with find_package and pkg-config; and
# consume the source tree with add_subdirectory. Not under a sanitizer: the
# consumers are built without it.
if(DEPENGINE_SANITIZE STREQUAL "")
  set(_embedding_package_args
      -DBUILD_DIR=${PROJECT_BINARY_DIR} -DSOURCE_DIR=${PROJECT_SOURCE_DIR}
      -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/embedding_package -DGENERATOR=${CMAKE_GENERATOR}
      -DC_COMPILER=${CMAKE_C_COMPILER} -DCXX_COMPILER=${CMAKE_CXX_COMPILER})
  get_target_property(_embedding_library_type depengine TYPE)
  list(APPEND _embedding_package_args -DLIBRARY_TYPE=${_embedding_library_type})
  foreach(step install find_package add_subdirectory pkg_config)
    add_test(NAME embedding_package_${step}
             COMMAND ${CMAKE_COMMAND} -DSTEP=${step} ${_embedding_package_args}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/embedding_package_test.cmake)
  endforeach()
  set_tests_properties(embedding_package_install PROPERTIES FIXTURES_SETUP depengine_installed)
  set_tests_properties(embedding_package_find_package embedding_package_pkg_config
                       PROPERTIES FIXTURES_REQUIRED depengine_installed)
  # Builds depengine's sources once more, in the consumer's build tree.
  set_tests_properties(embedding_package_add_subdirectory PROPERTIES TIMEOUT 1200)
endif()
