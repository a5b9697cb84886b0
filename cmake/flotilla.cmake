# Helpers shared by every layer's CMakeLists.txt.

# With FLOTILLA_SKIP_INCOMPLETE (a developer option, off by default), a target
# listing a source file that does not exist yet is skipped with a warning
# instead of failing the whole configure — for trees edited by several people.
option(FLOTILLA_SKIP_INCOMPLETE "skip targets whose sources are missing" OFF)

function(flotilla_sources_missing out)
  set(${out} FALSE PARENT_SCOPE)
  if(NOT FLOTILLA_SKIP_INCOMPLETE)
    return()
  endif()
  foreach(src ${ARGN})
    if(NOT IS_ABSOLUTE ${src} AND NOT EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${src})
      message(WARNING "skipping a target: ${CMAKE_CURRENT_SOURCE_DIR}/${src} is missing")
      set(${out} TRUE PARENT_SCOPE)
      return()
    endif()
  endforeach()
endfunction()

# Layer privacy (docs/layers.md). A layer's folder src/<layer>/ and its
# generated headers (build/src/<layer>/) are include roots of that layer's
# own targets only: another layer's private header does not resolve at all.
# Sources name private headers "<layer>/file.h", so each root is a directory
# holding one link, <layer> → the folder:
#   build/layers/<layer>/src/<layer> → src/<layer>
#   build/layers/<layer>/gen/<layer> → build/src/<layer>
# (The first keeps "src/" in __FILE__, which error locations trim to.)
function(flotilla_private_roots out layer)
  set(root ${PROJECT_BINARY_DIR}/layers/${layer})
  foreach(kind src gen)
    if(kind STREQUAL "src")
      set(folder ${PROJECT_SOURCE_DIR}/src/${layer})
    else()
      set(folder ${PROJECT_BINARY_DIR}/src/${layer})
    endif()
    if(NOT IS_SYMLINK ${root}/${kind}/${layer})
      file(MAKE_DIRECTORY ${root}/${kind})
      file(CREATE_LINK ${folder} ${root}/${kind}/${layer} SYMBOLIC)
    endif()
  endforeach()
  set(${out} ${root}/src ${root}/gen PARENT_SCOPE)
endfunction()

# The layer whose folder (src/<layer>/...) holds the calling CMakeLists.txt,
# or "" outside src/.
function(flotilla_current_layer out)
  file(RELATIVE_PATH where ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  if(where MATCHES "^src/([^/]+)")
    set(${out} ${CMAKE_MATCH_1} PARENT_SCOPE)
  else()
    set(${out} "" PARENT_SCOPE)
  endif()
endfunction()

# flotilla_private_headers(TARGET layer...): lets a test, benchmark or
# testing helper outside src/ include these layers' private headers. Name
# only the layers it needs; docs/layers.md lists who may.
function(flotilla_private_headers target)
  foreach(layer ${ARGN})
    flotilla_private_roots(roots ${layer})
    target_include_directories(${target} PRIVATE ${roots})
  endforeach()
endfunction()

# flotilla_library(NAME SOURCES a.cc b.cc DEPS lib1 lib2)
# A static library of the layer whose folder calls it: include/ is its
# public include root, its own folder a private one.
function(flotilla_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  flotilla_sources_missing(missing ${ARG_SOURCES})
  if(missing)
    add_library(${name} INTERFACE)
    return()
  endif()
  add_library(${name} STATIC ${ARG_SOURCES})
  flotilla_current_layer(layer)
  flotilla_private_roots(roots ${layer})
  target_include_directories(${name} PUBLIC ${PROJECT_SOURCE_DIR}/include PRIVATE ${roots})
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Every test runs as in a job whose user exported a job secret
# (docs/security.md), so processes a test starts without the launcher meet;
# tests of the secret itself blank it ("FLOTILLA_JOB_SECRET=").
set(FLOTILLA_TEST_SECRET "FLOTILLA_JOB_SECRET=ctest-job-secret-0123456789abcdef")

# flotilla_test(NAME SOURCES a_test.cc DEPS lib [LABELS l] [TIMEOUT s] [RUN_SERIAL]
#               [PRIVATE_HEADERS layer...])
# TIMEOUT (default 300 s) is for the release build; sanitizer builds multiply
# it by FLOTILLA_TEST_TIME_SCALE (cmake/sanitize.cmake).
# A GoogleTest binary registered with ctest, one ctest entry per binary. A
# layer's own tests (defined under src/<layer>/) see its private headers and
# also carry the label `unit`. A test elsewhere names the layers whose
# private headers it includes in PRIVATE_HEADERS (flotilla_private_headers).
function(flotilla_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;DEPS;LABELS;PRIVATE_HEADERS" ${ARGN})
  flotilla_sources_missing(missing ${ARG_SOURCES})
  if(missing)
    add_custom_target(${name})
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  flotilla_current_layer(layer)
  flotilla_private_headers(${name} ${layer} ${ARG_PRIVATE_HEADERS})
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * ${FLOTILLA_TEST_TIME_SCALE}")
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};FLOTILLA_SOURCE_DIR=${PROJECT_SOURCE_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
  if(layer)
    list(APPEND ARG_LABELS unit)
  endif()
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
  if(ARG_RUN_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
