# Core micro-benchmarks: the engine against its peers on the same graphs.
find_package(benchmark REQUIRED)
find_package(OpenMP REQUIRED COMPONENTS CXX)

add_executable(core_bench core_bench.cpp)
target_include_directories(core_bench PRIVATE ${PROJECT_SOURCE_DIR})
target_link_libraries(core_bench PRIVATE depengine benchmark::benchmark TBB::tbb OpenMP::OpenMP_CXX)

# StarPU, the peer closest to depengine (it too infers dependencies from data
# access modes), is optional so that core_bench builds where it is not
# packaged. DEPENGINE_BENCH_STARPU: ON requires it, OFF leaves it out, AUTO
# (default) adds the starpu benchmarks when pkg-config finds starpu-1.3.
depengine_tristate_option(DEPENGINE_BENCH_STARPU "Add StarPU to core_bench as a peer")
set(use_starpu OFF)
if(NOT DEPENGINE_BENCH_STARPU STREQUAL "OFF")
  find_package(PkgConfig)
  if(PkgConfig_FOUND)
    pkg_check_modules(STARPU QUIET IMPORTED_TARGET starpu-1.3)
    set(use_starpu "${STARPU_FOUND}")
  endif()
endif()
if(use_starpu)
  target_link_libraries(core_bench PRIVATE PkgConfig::STARPU)
  target_compile_definitions(core_bench PRIVATE DEPENGINE_BENCH_HAVE_STARPU)
  message(STATUS "core_bench: StarPU peer ON (starpu-1.3 ${STARPU_VERSION})")
elseif(DEPENGINE_BENCH_STARPU STREQUAL "ON")
  message(FATAL_ERROR "DEPENGINE_BENCH_STARPU=ON but pkg-config found no starpu-1.3 (Debian: libstarpu-dev)")
elseif(DEPENGINE_BENCH_STARPU STREQUAL "OFF")
  message(STATUS "core_bench: StarPU peer OFF")
else()
  message(STATUS "core_bench: StarPU peer OFF (pkg-config found no starpu-1.3; Debian: apt-get install libstarpu-dev)")
endif()
