# Included into llama.cpp's configure by build_llama_server.sh (-DCMAKE_PROJECT_INCLUDE=...).
# llama-server links the multimodal library (mtmd, never run without --mmproj) and
# llama-common (argument and chat-template parsing, the sampler wrapper): about 100 of its
# ~190 translation units, none on the decode path of a text model. On a shared 2-core machine
# they dominate the build, so they are compiled as unity batches at -O0 (mtmd) and -O1
# (llama-common); ggml, llama and the server itself keep the Release -O3 flags.
include_guard(GLOBAL)
function(llmcap_fast_build)
  foreach(t mtmd llama-common)
    if(TARGET ${t})
      set_target_properties(${t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 12)
    endif()
  endforeach()
  if(TARGET mtmd)
    target_compile_options(mtmd PRIVATE -O0)
    # These two refuse to be compiled next to mtmd's internal headers (#error).
    get_target_property(mtmd_dir mtmd SOURCE_DIR)
    set_source_files_properties("${mtmd_dir}/mtmd-helper.cpp" "${mtmd_dir}/mtmd-helper-gen.cpp"
      DIRECTORY "${mtmd_dir}" PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
  if(TARGET llama-common)
    target_compile_options(llama-common PRIVATE -O1)
    # json.cpp specialises templates that other files of the batch have instantiated.
    get_target_property(common_dir llama-common SOURCE_DIR)
    set_source_files_properties("${common_dir}/json.cpp" DIRECTORY "${common_dir}"
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL llmcap_fast_build)
