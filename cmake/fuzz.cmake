# Fuzz targets (tests/fuzz/<target>.cc, each defining LLVMFuzzerTestOneInput).
#
# FLOTILLA_FUZZ=ON (clang, `make fuzz`, build dir build-fuzz): every target is
# a libFuzzer binary and every library is built with coverage feedback,
# AddressSanitizer and UndefinedBehaviorSanitizer. Otherwise (the normal
# build) each target is linked with tests/fuzz/replay_main.cc and registered
# with ctest, so its seed corpus and every crash input found replay as
# ordinary tests.
option(FLOTILLA_FUZZ "build the fuzz targets as libFuzzer binaries (clang)" OFF)
if(FLOTILLA_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "FLOTILLA_FUZZ needs clang (make fuzz uses clang++-14), not "
                        "${CMAKE_CXX_COMPILER_ID}")
  endif()
  add_compile_options(-fsanitize=fuzzer-no-link,address,undefined
                      -fno-sanitize-recover=undefined -fno-omit-frame-pointer
                      -O1 -gline-tables-only -Wno-unknown-warning-option)
  add_link_options(-fsanitize=address,undefined)
  add_custom_target(fuzz_targets)
endif()

set(FLOTILLA_FUZZ_DIR ${PROJECT_SOURCE_DIR}/tests/fuzz)

# flotilla_fuzz_target(NAME SOURCES extra.cc DEPS lib1 lib2 [PRIVATE_HEADERS layer...])
# tests/fuzz/NAME.cc as the binary fuzz_NAME; its inputs live in
# tests/fuzz/corpus/NAME and tests/fuzz/crashes/NAME. PRIVATE_HEADERS: the
# layers whose private headers it (or a layer source it lists) includes.
function(flotilla_fuzz_target name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_HEADERS" ${ARGN})
  set(bin fuzz_${name})
  add_executable(${bin} ${FLOTILLA_FUZZ_DIR}/${name}.cc ${ARG_SOURCES})
  flotilla_private_headers(${bin} ${ARG_PRIVATE_HEADERS})
  set_target_properties(${bin} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/fuzz)
  target_include_directories(${bin} PRIVATE ${PROJECT_SOURCE_DIR}/tests)
  target_link_libraries(${bin} PRIVATE ${ARG_DEPS})
  if(FLOTILLA_FUZZ)
    target_sources(${bin} PRIVATE ${FLOTILLA_FUZZ_DIR}/log_level.cc)
    target_link_libraries(${bin} PRIVATE flotilla_common)
    target_link_options(${bin} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzz_targets ${bin})
    return()
  endif()
  target_sources(${bin} PRIVATE ${FLOTILLA_FUZZ_DIR}/replay_main.cc)
  add_test(NAME ${bin}_replay
           COMMAND ${bin} ${FLOTILLA_FUZZ_DIR}/corpus/${name} ${FLOTILLA_FUZZ_DIR}/crashes/${name})
  set_tests_properties(${bin}_replay PROPERTIES LABELS fuzz TIMEOUT 300
    ENVIRONMENT "OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
endfunction()
