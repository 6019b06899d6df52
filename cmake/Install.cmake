# Shared and static library, install rules, CMake package and pkg-config file.
#
# `depengine` is the library of the kind BUILD_SHARED_LIBS selects (static by
# default). This file adds its companion of the other kind, linked from the
# same object files, so that every build offers both: a C or C++ program links
# whichever it prefers, and a language with a C FFI (Python ctypes) loads the
# shared one. Target names, in the build tree and in the installed package:
#
#   depengine::depengine   the kind BUILD_SHARED_LIBS selected
#   depengine::shared      libdepengine.so
#   depengine::static      libdepengine.a
#   depengine::comm        libdepengine_comm: the Communicator and the KVStore
#                          (comm/), over MPI when built with it; one kind
#                          only, linked to the primary library

include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_target_property(_depengine_type depengine TYPE)
if(_depengine_type STREQUAL "STATIC_LIBRARY")
  set(_depengine_primary static)
  set(_depengine_companion shared)
else()
  set(_depengine_primary shared)
  set(_depengine_companion static)
endif()
string(TOUPPER ${_depengine_companion} _depengine_companion_type)

add_library(depengine_${_depengine_companion} ${_depengine_companion_type} $<TARGET_OBJECTS:depengine>)
add_library(depengine::${_depengine_companion} ALIAS depengine_${_depengine_companion})
add_library(depengine::${_depengine_primary} ALIAS depengine)
set_target_properties(depengine PROPERTIES EXPORT_NAME ${_depengine_primary})
set_target_properties(depengine_${_depengine_companion} PROPERTIES
  OUTPUT_NAME depengine EXPORT_NAME ${_depengine_companion} LINKER_LANGUAGE CXX)
set(_depengine_shared_target depengine)
if(_depengine_companion STREQUAL "shared")
  set(_depengine_shared_target depengine_shared)
endif()
set_target_properties(${_depengine_shared_target} PROPERTIES
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR})

# The public headers are C++20: a consumer compiles them in that mode.
target_compile_features(depengine PUBLIC cxx_std_20)

# The companion has no sources, so it copies the usage requirements of
# `depengine`: what consumers compile with, and what it links. Link needs the
# primary keeps private (oneTBB) stay private: a shared companion hides them,
# a static one passes them on as $<LINK_ONLY:...>, as CMake does for any
# static library. The link lists keep CMake's "::@(directory-id)" markers, so
# that a target an area found in its own folder (not visible here) resolves.
foreach(_prop INTERFACE_INCLUDE_DIRECTORIES INTERFACE_COMPILE_DEFINITIONS
              INTERFACE_COMPILE_OPTIONS INTERFACE_COMPILE_FEATURES INTERFACE_LINK_OPTIONS)
  get_target_property(_value depengine ${_prop})
  if(_value)
    set_property(TARGET depengine_${_depengine_companion} PROPERTY ${_prop} "${_value}")
  endif()
endforeach()
get_target_property(_depengine_all_libs depengine LINK_LIBRARIES)
get_target_property(_depengine_interface_libs depengine INTERFACE_LINK_LIBRARIES)
list(FILTER _depengine_interface_libs EXCLUDE REGEX "^\\$<LINK_ONLY:")
target_link_libraries(depengine_${_depengine_companion}
  PRIVATE ${_depengine_all_libs} INTERFACE ${_depengine_interface_libs})

if(NOT DEPENGINE_INSTALL)
  return()
endif()

# find_dependency() lines for depengineConfig.cmake: every package whose
# targets the library links, public or private (a static library needs the
# private ones at the consumer's link, a shared one names them in its
# exported link dependencies). A target `Pkg::name` comes from
# find_package(Pkg), except for the CUDA toolkit's. For depengine.pc, the
# libraries a static link needs.
set(DEPENGINE_FIND_DEPENDENCIES "")
set(_depengine_pc_private_libs "")
foreach(_lib IN LISTS _depengine_all_libs)
  if(_lib MATCHES "^::@" OR _lib MATCHES "^\\$<BUILD_INTERFACE:")
    continue()  # a directory marker; a dependency of building depengine only
  endif()
  string(REGEX REPLACE "^\\$<[A-Z_]+:(.*)>$" "\\1" _lib "${_lib}")
  if(NOT _lib MATCHES "^([A-Za-z0-9_]+)::")
    continue()
  endif()
  set(_package ${CMAKE_MATCH_1})
  if(_package STREQUAL "CUDA")
    set(_package CUDAToolkit)
  endif()
  string(APPEND DEPENGINE_FIND_DEPENDENCIES "find_dependency(${_package})\n")
  # PkgConfig::NAME targets come from pkg_check_modules, which an area
  # recorded as NAME=module in DEPENGINE_PKG_CONFIG_MODULES.
  if(_package STREQUAL "PkgConfig" AND _lib MATCHES "^PkgConfig::(.+)$")
    set(_prefix ${CMAKE_MATCH_1})
    get_property(_pc_modules GLOBAL PROPERTY DEPENGINE_PKG_CONFIG_MODULES)
    foreach(_entry IN LISTS _pc_modules)
      if(_entry MATCHES "^${_prefix}=(.+)$")
        string(APPEND DEPENGINE_FIND_DEPENDENCIES
          "pkg_check_modules(${_prefix} REQUIRED QUIET IMPORTED_TARGET ${CMAKE_MATCH_1})\n")
      endif()
    endforeach()
  endif()
  if(_lib STREQUAL "Threads::Threads")
    list(APPEND _depengine_pc_private_libs "-pthread")
  elseif(TARGET ${_lib})
    get_target_property(_type ${_lib} TYPE)
    if(NOT _type STREQUAL "INTERFACE_LIBRARY")
      list(APPEND _depengine_pc_private_libs "$<TARGET_LINKER_FILE:${_lib}>")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES _depengine_pc_private_libs)
string(REPLACE ";" " " DEPENGINE_PC_LIBS_PRIVATE "${_depengine_pc_private_libs}")
string(REPLACE "\n" ";" _depengine_dep_lines "${DEPENGINE_FIND_DEPENDENCIES}")
list(REMOVE_DUPLICATES _depengine_dep_lines)
string(REPLACE ";" "\n" DEPENGINE_FIND_DEPENDENCIES "${_depengine_dep_lines}")
set(DEPENGINE_PRIMARY_KIND ${_depengine_primary})
# depengine::comm links MPI::MPI_C when built with MPI (privately: a static
# libdepengine_comm passes it on, a shared one names it); only C is needed.
if(DEPENGINE_MPI_ENABLED)
  string(APPEND DEPENGINE_FIND_DEPENDENCIES "\nfind_dependency(MPI COMPONENTS C)")
endif()

set(_depengine_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/depengine)

set_target_properties(depengine_comm PROPERTIES EXPORT_NAME comm)
install(TARGETS depengine depengine_${_depengine_companion} depengine_comm EXPORT depengineTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/depengine DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT depengineTargets NAMESPACE depengine:: DESTINATION ${_depengine_cmake_dir})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/depengineConfig.cmake.in
  ${PROJECT_BINARY_DIR}/depengineConfig.cmake INSTALL_DESTINATION ${_depengine_cmake_dir})
# 0.x releases make no compatibility promise between minor versions.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/depengineConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/depengineConfig.cmake ${PROJECT_BINARY_DIR}/depengineConfigVersion.cmake
  DESTINATION ${_depengine_cmake_dir})

# The .pc file finds the prefix from its own place, so the install relocates.
file(RELATIVE_PATH DEPENGINE_PC_PREFIX_FROM_PCFILEDIR /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" DEPENGINE_PC_PREFIX_FROM_PCFILEDIR "${DEPENGINE_PC_PREFIX_FROM_PCFILEDIR}")
# @VAR@ first, then generator expressions (the path of libtbb).
configure_file(${CMAKE_CURRENT_LIST_DIR}/depengine.pc.in ${PROJECT_BINARY_DIR}/depengine.pc.gen @ONLY)
file(GENERATE OUTPUT ${PROJECT_BINARY_DIR}/depengine.pc INPUT ${PROJECT_BINARY_DIR}/depengine.pc.gen)
install(FILES ${PROJECT_BINARY_DIR}/depengine.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

# depengine-comm.pc: the communicator's library on top of depengine.pc. A
# static libdepengine_comm carries no record of MPI, so its MPI libraries are
# in Libs; a shared one names them itself (Libs.private).
get_property(_depengine_comm_libs GLOBAL PROPERTY DEPENGINE_COMM_LINK_LIBRARIES)
string(REPLACE ";" " " _depengine_comm_libs "${_depengine_comm_libs}")
get_target_property(_depengine_comm_type depengine_comm TYPE)
if(_depengine_comm_type STREQUAL "STATIC_LIBRARY")
  set(DEPENGINE_COMM_PC_LIBS "${_depengine_comm_libs}")
  set(DEPENGINE_COMM_PC_LIBS_PRIVATE "")
else()
  set(DEPENGINE_COMM_PC_LIBS "")
  set(DEPENGINE_COMM_PC_LIBS_PRIVATE "${_depengine_comm_libs}")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/depengine-comm.pc.in ${PROJECT_BINARY_DIR}/depengine-comm.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/depengine-comm.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
