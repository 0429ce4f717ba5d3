# llmcap_embed(<target> NAMESPACE <ns> HEADER <h> OUTPUT <cc> FILES <f>...): compiles text files
# into <target>. <h> must declare, in namespace <ns>:
#   struct EmbeddedFile { std::string_view name; std::string_view content; };
#   extern const EmbeddedFile kFiles[];  extern const std::size_t kFileCount;
# The generated source is rebuilt whenever an input file changes.
set(LLMCAP_EMBED_SCRIPT "${CMAKE_CURRENT_LIST_DIR}/embed_files.cmake")
function(llmcap_embed target)
  cmake_parse_arguments(ARG "" "NAMESPACE;OUTPUT;HEADER" "FILES" ${ARGN})
  set(out "${CMAKE_CURRENT_BINARY_DIR}/${ARG_OUTPUT}")
  set(abs_files "")
  foreach(f IN LISTS ARG_FILES)
    get_filename_component(a "${f}" ABSOLUTE)
    list(APPEND abs_files "${a}")
  endforeach()
  string(REPLACE ";" "|" files_arg "${abs_files}")
  add_custom_command(
    OUTPUT "${out}"
    COMMAND ${CMAKE_COMMAND} "-DOUT=${out}" "-DNAMESPACE=${ARG_NAMESPACE}" "-DHEADER=${ARG_HEADER}" "-DFILES=${files_arg}"
            -P "${LLMCAP_EMBED_SCRIPT}"
    DEPENDS ${abs_files} "${LLMCAP_EMBED_SCRIPT}"
    COMMENT "Embedding ${ARG_OUTPUT}" VERBATIM)
  target_sources(${target} PRIVATE "${out}")
endfunction()
