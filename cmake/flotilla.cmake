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

# flotilla_library(NAME SOURCES a.cc b.cc DEPS lib1 lib2)
# A static library with the public and source include roots.
function(flotilla_library name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS" ${ARGN})
  flotilla_sources_missing(missing ${ARG_SOURCES})
  if(missing)
    add_library(${name} INTERFACE)
    return()
  endif()
  add_library(${name} STATIC ${ARG_SOURCES})
  target_include_directories(${name} PUBLIC
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_BINARY_DIR}/src)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS})
endfunction()

# Every test runs as in a job whose user exported a job secret
# (docs/security.md), so processes a test starts without the launcher meet;
# tests of the secret itself blank it ("FLOTILLA_JOB_SECRET=").
set(FLOTILLA_TEST_SECRET "FLOTILLA_JOB_SECRET=ctest-job-secret-0123456789abcdef")

# flotilla_test(NAME SOURCES a_test.cc DEPS lib [LABELS l] [TIMEOUT s] [RUN_SERIAL])
# TIMEOUT (default 300 s) is for the release build; sanitizer builds multiply
# it by FLOTILLA_TEST_TIME_SCALE (cmake/sanitize.cmake).
# A GoogleTest binary registered with ctest, one ctest entry per binary. A
# layer's own tests (defined under src/) also carry the label `unit`.
function(flotilla_test name)
  cmake_parse_arguments(ARG "RUN_SERIAL" "TIMEOUT" "SOURCES;DEPS;LABELS" ${ARGN})
  flotilla_sources_missing(missing ${ARG_SOURCES})
  if(missing)
    add_custom_target(${name})
    return()
  endif()
  add_executable(${name} ${ARG_SOURCES})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
  target_link_libraries(${name} PRIVATE ${ARG_DEPS} GTest::gtest GTest::gtest_main GTest::gmock)
  add_test(NAME ${name} COMMAND ${name})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * ${FLOTILLA_TEST_TIME_SCALE}")
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT}
    ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};FLOTILLA_SOURCE_DIR=${PROJECT_SOURCE_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
  file(RELATIVE_PATH where ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
  if(where MATCHES "^src/")
    list(APPEND ARG_LABELS unit)
  endif()
  if(ARG_LABELS)
    set_tests_properties(${name} PROPERTIES LABELS "${ARG_LABELS}")
  endif()
  if(ARG_RUN_SERIAL)
    set_tests_properties(${name} PROPERTIES RUN_SERIAL TRUE)
  endif()
endfunction()
