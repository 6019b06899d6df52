# Consumes depengine the ways docs/embedding.md describes, as a framework's
# own build would. Run by ctest (see tests/embedding.cmake) as
#   cmake -DSTEP=<step> -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=...
#         -DC_COMPILER=... -DCXX_COMPILER=... -DLIBRARY_TYPE=<type of the depengine target>
#         -P embedding_package_test.cmake
# Steps:
#   install           cmake --install the build tree into WORK_DIR/prefix
#   find_package      build tests/embedding_consumer against that prefix; run it
#   add_subdirectory  build tests/embedding_consumer with depengine's sources; run it
#   pkg_config        compile tests/embedding_consumer/consumer.c with the
#                     compiler and `pkg-config --cflags --libs depengine`, and
#                     consumer_comm.cpp with `... depengine-comm`; run them

cmake_minimum_required(VERSION 3.25)

set(prefix ${WORK_DIR}/prefix)
set(consumer_source ${SOURCE_DIR}/tests/embedding_consumer)

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  message("${out}${err}")
  if(NOT rc EQUAL 0)
    list(JOIN ARGN " " command)
    message(FATAL_ERROR "failed (${rc}): ${command}")
  endif()
endfunction()

# Configures, builds and runs the consumer project in WORK_DIR/<name>.
function(build_and_run_consumer name build_type)
  set(dir ${WORK_DIR}/${name})
  file(REMOVE_RECURSE ${dir})
  run(${CMAKE_COMMAND} -S ${consumer_source} -B ${dir} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=${build_type}
      -DCMAKE_C_COMPILER=${C_COMPILER} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} ${ARGN})
  run(${CMAKE_COMMAND} --build ${dir} -j 2)
  foreach(program consumer_cpp consumer_c_shared consumer_c_static consumer_comm)
    run(${dir}/${program})
  endforeach()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${prefix})
  run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
  file(GLOB_RECURSE installed RELATIVE ${prefix} ${prefix}/*)
  foreach(expected include/depengine/engine.h include/depengine/c_api.h lib/libdepengine.a lib/libdepengine.so
                   include/depengine/comm.h include/depengine/kvstore.h lib/libdepengine_comm.a
                   lib/cmake/depengine/depengineConfig.cmake lib/cmake/depengine/depengineConfigVersion.cmake
                   lib/cmake/depengine/depengineTargets.cmake lib/pkgconfig/depengine.pc
                   lib/pkgconfig/depengine-comm.pc)
    if(NOT expected IN_LIST installed)
      message(FATAL_ERROR "not installed: ${expected}; installed: ${installed}")
    endif()
  endforeach()

elseif(STEP STREQUAL "find_package")
  build_and_run_consumer(find_package Release -DCMAKE_PREFIX_PATH=${prefix}
                         -DEXPECTED_DEPENGINE_TYPE=${LIBRARY_TYPE})
  build_and_run_consumer(find_package_shared Release -DCMAKE_PREFIX_PATH=${prefix}
                         -Ddepengine_USE_STATIC_LIBS=OFF -DEXPECTED_DEPENGINE_TYPE=SHARED_LIBRARY)

elseif(STEP STREQUAL "add_subdirectory")
  # Debug: the sources compile faster, and this step checks the build, not speed.
  build_and_run_consumer(add_subdirectory Debug -DDEPENGINE_CONSUMER_MODE=add_subdirectory
                         -DDEPENGINE_SOURCE_DIR=${SOURCE_DIR} -DEXPECTED_DEPENGINE_TYPE=${LIBRARY_TYPE})

elseif(STEP STREQUAL "pkg_config")
  set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig)
  execute_process(COMMAND pkg-config --cflags --libs depengine OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config does not find depengine in ${prefix}/lib/pkgconfig")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(dir ${WORK_DIR}/pkg_config)
  file(REMOVE_RECURSE ${dir})
  file(MAKE_DIRECTORY ${dir})
  run(${C_COMPILER} -std=c99 ${consumer_source}/consumer.c ${flags} -o ${dir}/consumer_c)
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${dir}/consumer_c)

  execute_process(COMMAND pkg-config --cflags --libs depengine-comm OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                  OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config does not find depengine-comm in ${prefix}/lib/pkgconfig")
  endif()
  separate_arguments(flags UNIX_COMMAND "${flags}")
  run(${CXX_COMPILER} -std=c++20 ${consumer_source}/consumer_comm.cpp ${flags} -o ${dir}/consumer_comm)
  run(${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${prefix}/lib ${dir}/consumer_comm)

else()
  message(FATAL_ERROR "unknown STEP '${STEP}'")
endif()
