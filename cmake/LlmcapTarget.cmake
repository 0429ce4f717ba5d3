# Common settings for llmcap's own targets. Settings go on targets, never on CMAKE_CXX_FLAGS.
#
# Build-speed knobs (docs/ci.md has the measurements behind them):
#   LLMCAP_LINKER    lld (default when the compiler accepts -fuse-ld=lld), gold or bfd. lld links
#                    our ~70 test executables several times faster than GNU ld.
#   LLMCAP_DEBUG_INFO  "" (default: what the build type says), or a -g level such as -g1 (line
#                    tables only: enough for backtraces and sanitizer reports, about 1/4 of the
#                    compile and link work of -g's full debug info). The CI presets use -g1.
include(CheckLinkerFlag)
set(LLMCAP_LINKER "auto" CACHE STRING "Linker for our executables: auto, lld, gold, bfd")
set_property(CACHE LLMCAP_LINKER PROPERTY STRINGS auto lld gold bfd)
set(LLMCAP_DEBUG_INFO "" CACHE STRING "Override the debug-info level of our code, e.g. -g1")
if(LLMCAP_LINKER STREQUAL "auto")
  check_linker_flag(CXX "-fuse-ld=lld" LLMCAP_HAVE_LLD)
  if(LLMCAP_HAVE_LLD)
    set(LLMCAP_LINK_FLAG "-fuse-ld=lld")
  else()
    set(LLMCAP_LINK_FLAG "")
  endif()
elseif(LLMCAP_LINKER MATCHES "^(lld|gold|bfd)$")
  set(LLMCAP_LINK_FLAG "-fuse-ld=${LLMCAP_LINKER}")
else()
  message(FATAL_ERROR "LLMCAP_LINKER must be auto, lld, gold or bfd, not '${LLMCAP_LINKER}'")
endif()
# LLMCAP_UNITY     ON (default): our libraries and test executables compile as unity builds,
#                  LLMCAP_UNITY_BATCH sources per unity translation unit (CMake's
#                  UNITY_BUILD_MODE BATCH): each batch parses the shared headers (the standard
#                  library, nlohmann/json, Asio, gtest) once instead of once per source file.
#                  OFF compiles every source on its own (e.g. to check that each .cc includes
#                  what it uses). Sources in one library or test executable therefore must not
#                  define the same name at file scope (anonymous namespaces, static functions).
# LLMCAP_LIBRARY_OPT  "" (default: what the build type says), or an -O level such as -O1 for the
#                  libraries named in LLMCAP_LIBRARY_OPT_FOR (folder names as in llmcap::<name>;
#                  empty: every library), never the test executables. The asan preset compiles
#                  the twin's libraries (analysis, sim, server_engine) at -O1: the tests that
#                  predict in virtual time spend their CPU there, 3.2x more of it at -O0 under
#                  ASan, while -O1 everywhere would cost the cold build more (-O1 compiles 1.7x
#                  slower) than it saves in the tests (docs/ci.md).
set(LLMCAP_LIBRARY_OPT "" CACHE STRING "Override the optimisation level of our libraries, e.g. -O1")
set(LLMCAP_LIBRARY_OPT_FOR "" CACHE STRING "Libraries LLMCAP_LIBRARY_OPT applies to (empty: all)")
if(NOT LLMCAP_LIBRARY_OPT STREQUAL "" AND NOT LLMCAP_LIBRARY_OPT MATCHES "^-O[0-3gs]$")
  message(FATAL_ERROR "LLMCAP_LIBRARY_OPT must be empty or -O0 ... -O3, -Og, -Os, not '${LLMCAP_LIBRARY_OPT}'")
endif()
option(LLMCAP_UNITY "Unity builds of our libraries and test executables" ON)
set(LLMCAP_UNITY_BATCH "16" CACHE STRING "Sources per unity translation unit")
if(NOT LLMCAP_DEBUG_INFO STREQUAL "" AND NOT LLMCAP_DEBUG_INFO MATCHES "^-g[0-3]?$")
  message(FATAL_ERROR "LLMCAP_DEBUG_INFO must be empty or -g, -g0 ... -g3, not '${LLMCAP_DEBUG_INFO}'")
endif()

function(llmcap_settings target)
  target_compile_features(${target} PUBLIC cxx_std_20)
  set_target_properties(${target} PROPERTIES CXX_EXTENSIONS OFF)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic)
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    # GCC 12 false positive on Asio's coroutine frames (awaitable_frame_base::operator delete)
    # at -O2 (seen with g++ 12.2 in the release preset).
    target_compile_options(${target} PRIVATE -Wno-mismatched-new-delete)
  endif()
  if(LLMCAP_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(LLMCAP_DEBUG_INFO)
    # Comes after the build type's -g on the command line, and the last -g level wins.
    target_compile_options(${target} PRIVATE ${LLMCAP_DEBUG_INFO})
  endif()
  if(LLMCAP_LINK_FLAG)
    target_link_options(${target} PRIVATE ${LLMCAP_LINK_FLAG})
  endif()
  if(LLMCAP_SANITIZE)
    # PRIVATE: every target of ours calls this, and a test executable narrows the checks of its
    # own sources (llmcap_test), which flags inherited from the libraries would undo.
    target_compile_options(${target} PRIVATE -fsanitize=address,undefined -fno-omit-frame-pointer
                                             -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()

# llmcap_unity(<target>): compile <target> as a unity build when LLMCAP_UNITY is on.
function(llmcap_unity target)
  if(LLMCAP_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_MODE BATCH
                                               UNITY_BUILD_BATCH_SIZE ${LLMCAP_UNITY_BATCH})
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
      # In a unity source a class of one .cc may hold a type of an earlier .cc's anonymous
      # namespace; GCC warns about that as if the .cc were a header.
      target_compile_options(${target} PRIVATE -Wno-subobject-linkage)
    endif()
  endif()
endfunction()

# llmcap_library(<folder> SOURCES ...): one library per top-level folder, alias llmcap::<folder>.
function(llmcap_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(llmcap_${name} STATIC ${ARG_SOURCES})
  add_library(llmcap::${name} ALIAS llmcap_${name})
  target_include_directories(llmcap_${name} PUBLIC "${PROJECT_SOURCE_DIR}")
  llmcap_settings(llmcap_${name})
  llmcap_unity(llmcap_${name})
  if(LLMCAP_LIBRARY_OPT AND (NOT LLMCAP_LIBRARY_OPT_FOR OR name IN_LIST LLMCAP_LIBRARY_OPT_FOR))
    # After the build type's -O on the command line: the last -O level wins.
    target_compile_options(llmcap_${name} PRIVATE ${LLMCAP_LIBRARY_OPT})
  endif()
endfunction()

# llmcap_check_library_opt_for(): after every library is defined, a name in
# LLMCAP_LIBRARY_OPT_FOR that is none of them is an error (a misspelling would otherwise leave
# that library at the build type's level without a word).
function(llmcap_check_library_opt_for)
  foreach(name IN LISTS LLMCAP_LIBRARY_OPT_FOR)
    if(NOT TARGET llmcap_${name})
      message(FATAL_ERROR "LLMCAP_LIBRARY_OPT_FOR names '${name}', which is not one of our "
                          "libraries (llmcap_<name>: analysis, sim, server_engine, ...)")
    endif()
  endforeach()
endfunction()

# llmcap_discover_labelled(<name> <labels> <extra label> <gtest filter> <run serial>): the cases
# of <name> the filter selects are discovered with <labels> plus <extra label> (RUN_SERIAL when
# <run serial>), the others with <labels>; <name> joins the target llmcap_timing_tests.
function(llmcap_discover_labelled name labels extra filter run_serial)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "${filter}"
                       TEST_LIST ${name}_${extra}_TESTS PROPERTIES LABELS "${labels}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 TEST_FILTER "-${filter}"
                       PROPERTIES LABELS "${labels}")
  # gtest_discover_tests cannot pass a list-valued LABELS through to CTest; this file, read by
  # CTest after the discovered tests, adds the extra label to the selected cases.
  set(labels_file "${CMAKE_CURRENT_BINARY_DIR}/${name}_${extra}_labels.cmake")
  set(serial "")
  if(run_serial)
    set(serial " RUN_SERIAL TRUE")
  endif()
  file(WRITE "${labels_file}"
       "foreach(t IN LISTS ${name}_${extra}_TESTS)\n"
       "  set_tests_properties(\"\${t}\" PROPERTIES LABELS \"${labels};${extra}\"${serial})\n"
       "endforeach()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${labels_file}")
  if(NOT TARGET llmcap_timing_tests)
    add_custom_target(llmcap_timing_tests)
  endif()
  add_dependencies(llmcap_timing_tests ${name})
endfunction()

# llmcap_test(<name> SOURCES ... LIBS ... LABELS ... [TIMING <gtest filter>]
#             [RELEASE <gtest filter>]): a GoogleTest executable registered with CTest, one CTest
# test per test case.
# TIMING names (gtest filter syntax, e.g. "*AgentTiming.*:AgentOpenLoop.*") the cases that
# assert wall-clock accuracy (e.g. "within 1 ms of the truth"), which ASan's 2-5x slowdown makes
# meaningless: they get the extra label `timing`, which the asan test preset excludes; they
# run in the timing lane (docs/ci.md), which builds the target `llmcap_timing_tests`: every
# executable with TIMING or RELEASE cases.
# RELEASE names the cases that are CPU-bound but not timing-dependent (e.g. hundreds of plans in
# virtual time), which ASan would slow 3-5x: they get the label `release` instead, which the
# asan preset excludes too; `make test` runs them in the release build beside the asan lane's
# tests (not alone: the host's load cannot change what they assert). Everything else must pass
# under ASan.
function(llmcap_test name)
  cmake_parse_arguments(ARG "" "TIMING;RELEASE" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  llmcap_settings(${name})
  llmcap_unity(${name})
  if(LLMCAP_SANITIZE)
    # The test sources skip UBSan's null and alignment checks, which instrument every pointer
    # use at -O0 and were 35 % of a test executable's compile work; everything else of ASan and
    # UBSan stays, and our libraries (all the product's code, llmcapd) keep every check. A null
    # dereference in a test still stops it (ASan's SEGV report), and x86 runs misaligned loads.
    target_compile_options(${name} PRIVATE -fno-sanitize=null,alignment)
  endif()
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} llmcap_test_paths GTest::gmock
                                        GTest::gtest_main)
  if(ARG_RELEASE AND ARG_TIMING)
    message(FATAL_ERROR "llmcap_test(${name}): TIMING and RELEASE in one executable")
  endif()
  if(ARG_RELEASE)
    llmcap_discover_labelled(${name} "${ARG_LABELS}" release "${ARG_RELEASE}" FALSE)
  elseif(ARG_TIMING)
    # Each timing case runs alone (RUN_SERIAL): a wall-clock accuracy case must not share the
    # cores with another test.
    llmcap_discover_labelled(${name} "${ARG_LABELS}" timing "${ARG_TIMING}" TRUE)
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
  endif()
endfunction()
