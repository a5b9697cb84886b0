# FLOTILLA_SANITIZE=address,undefined (or thread): every target built with
# those sanitizers. `make test SANITIZE=address` and `make test SANITIZE=thread`
# configure build-asan/ and build-tsan/ with it (scripts/test-sanitized.sh).
#
# Sanitizer builds compile at -O1 (about half the time of -O3, frames kept in
# reports). UBSan findings abort the test that hit them instead of only
# printing. Every process a test starts inherits the sanitizer options below
# (set in ctest's own environment), so an ASan, LSan or TSan report in a child
# whose output the test discards still lands in <build>/sanitizer-reports/ and
# fails the run. (UBSan beside ASan prints to stderr whatever log_path says;
# with halt_on_error its exit status fails the process.)
set(FLOTILLA_SANITIZE "" CACHE STRING "sanitizers for every target, e.g. address,undefined")

# FLOTILLA_SANITIZE_PYTHON_ENV: what a test running /usr/bin/python3 against
# the sanitized `_core` extension adds to its ENVIRONMENT (the interpreter is
# not built with the sanitizer, so its runtime is preloaded). Empty otherwise.
# Under ASan the interpreter does not free its own objects at exit:
# allocations are recorded two frames deep there, so the interpreter's entries
# in tests/sanitizers/lsan.supp match only memory that the interpreter (or
# numpy) allocated itself, never memory that Flotilla's code allocated while
# called from Python.
set(FLOTILLA_SANITIZE_PYTHON_ENV "")

# FLOTILLA_TEST_TIME_SCALE: how many times slower the tests run in this build.
# flotilla_test and flotilla_pytest multiply their ctest TIMEOUT by it, and
# every test sees it as the environment variable FLOTILLA_TEST_TIME_SCALE, to
# stretch its allowances for slow starts and slow reactions (never the
# timeouts it configures in Flotilla itself).
set(FLOTILLA_TEST_TIME_SCALE 1)

if(FLOTILLA_SANITIZE)
  set(CMAKE_CXX_FLAGS_RELEASE "-O1 -DNDEBUG")
  add_compile_options(-fsanitize=${FLOTILLA_SANITIZE} -fno-omit-frame-pointer -g1)
  # GCC 12's -Wmaybe-uninitialized misfires under ASan at -O1: it flags
  # libstdc++'s own <regex> (a std::function moved inside
  # regex_automaton.h) in the tests that use it.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    add_compile_options(-Wno-maybe-uninitialized)
  endif()
  add_link_options(-fsanitize=${FLOTILLA_SANITIZE})
  if(FLOTILLA_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()

  set(supp ${PROJECT_SOURCE_DIR}/tests/sanitizers)
  set(reports ${PROJECT_BINARY_DIR}/sanitizer-reports)
  if(FLOTILLA_SANITIZE MATCHES "address")
    set(runtime asan)
    set(FLOTILLA_TEST_TIME_SCALE 3)
    set(options
      "ASAN_OPTIONS=detect_leaks=1:log_path=${reports}/asan:print_suppressions=0"
      "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0")
  elseif(FLOTILLA_SANITIZE MATCHES "thread")
    set(runtime tsan)
    set(FLOTILLA_TEST_TIME_SCALE 5)
    set(options
      "TSAN_OPTIONS=log_path=${reports}/tsan:suppressions=${supp}/tsan.supp:second_deadlock_stack=1:print_suppressions=0")
  endif()
  if(FLOTILLA_SANITIZE MATCHES "undefined")
    list(APPEND options
      "UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:log_path=${reports}/ubsan:suppressions=${supp}/ubsan.supp")
  endif()

  # ctest runs this file before the tests: the options reach every test and
  # everything it starts, including tests added later by any layer.
  set(env_file ${PROJECT_BINARY_DIR}/sanitizer-env.cmake)
  set(lines "file(MAKE_DIRECTORY \"${reports}\")\n")
  list(APPEND options "FLOTILLA_TEST_TIME_SCALE=${FLOTILLA_TEST_TIME_SCALE}")
  foreach(option ${options})
    string(REGEX MATCH "^[A-Z_]+" name "${option}")
    string(REGEX REPLACE "^[A-Z_]+=" "" value "${option}")
    string(APPEND lines "set(ENV{${name}} \"${value}\")\n")
  endforeach()
  file(WRITE ${env_file} "${lines}")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${env_file})

  if(runtime)
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${runtime}.so
      OUTPUT_VARIABLE preload OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT EXISTS "${preload}")
      message(FATAL_ERROR "FLOTILLA_SANITIZE=${FLOTILLA_SANITIZE}: the compiler has no lib${runtime}.so "
        "(${CMAKE_CXX_COMPILER} -print-file-name=lib${runtime}.so printed '${preload}')")
    endif()
    # libstdc++ is preloaded too: the interpreter does not link it, and the
    # runtime's __cxa_throw interceptor, set up before any library is
    # loaded, would find no real __cxa_throw (a CHECK failure at the first
    # C++ exception thrown under Python).
    execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so
      OUTPUT_VARIABLE cxx_runtime OUTPUT_STRIP_TRAILING_WHITESPACE)
    get_filename_component(cxx_runtime "${cxx_runtime}" REALPATH)
    set(FLOTILLA_SANITIZE_PYTHON_ENV "LD_PRELOAD=${preload}:${cxx_runtime}")
    if(runtime STREQUAL "asan")
      list(APPEND FLOTILLA_SANITIZE_PYTHON_ENV
        "LSAN_OPTIONS=suppressions=${supp}/lsan.supp:print_suppressions=0:malloc_context_size=2")
    endif()
  endif()
endif()
