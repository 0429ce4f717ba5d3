# Common settings for llmcap's own targets. Settings go on targets, never on CMAKE_CXX_FLAGS.
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
  if(LLMCAP_SANITIZE)
    target_compile_options(${target} PUBLIC -fsanitize=address,undefined -fno-omit-frame-pointer
                                            -fno-sanitize-recover=undefined)
    target_link_options(${target} PUBLIC -fsanitize=address,undefined)
  endif()
endfunction()

# llmcap_library(<folder> SOURCES ...): one library per top-level folder, alias llmcap::<folder>.
function(llmcap_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES" ${ARGN})
  add_library(llmcap_${name} STATIC ${ARG_SOURCES})
  add_library(llmcap::${name} ALIAS llmcap_${name})
  target_include_directories(llmcap_${name} PUBLIC "${PROJECT_SOURCE_DIR}")
  llmcap_settings(llmcap_${name})
endfunction()

# llmcap_test(<name> SOURCES ... LIBS ...): a GoogleTest executable registered with CTest.
function(llmcap_test name)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${ARG_SOURCES})
  llmcap_settings(${name})
  target_link_libraries(${name} PRIVATE ${ARG_LIBS} GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${ARG_LABELS}")
endfunction()
