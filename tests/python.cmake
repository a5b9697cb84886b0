# The Python package's tests: pytest files under tests/python, run by
# FLOTILLA_PYTHON (Debian's /usr/bin/python3) against the in-tree package
# (PYTHONPATH=build/python), one ctest entry per file. In sanitizer builds the
# interpreter gets the sanitizer's runtime preloaded (cmake/sanitize.cmake).
find_package(nlohmann_json REQUIRED)
add_executable(py_model_tool python/model_tool.cc)
set_target_properties(py_model_tool PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
target_link_libraries(py_model_tool PRIVATE flotilla_api flotilla_io nlohmann_json::nlohmann_json)

# flotilla_pytest(NAME file.py [TIMEOUT s]): TIMEOUT scaled as flotilla_test's.
function(flotilla_pytest name file)
  cmake_parse_arguments(ARG "" "TIMEOUT" "" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  math(EXPR ARG_TIMEOUT "${ARG_TIMEOUT} * ${FLOTILLA_TEST_TIME_SCALE}")
  add_test(NAME ${name}
    COMMAND ${FLOTILLA_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_SOURCE_DIR}/python/${file})
  set(env "PYTHONPATH=${FLOTILLA_PYTHON_DIR};FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};FLOTILLA_SOURCE_DIR=${PROJECT_SOURCE_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
  list(APPEND env ${FLOTILLA_SANITIZE_PYTHON_ENV})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS python ENVIRONMENT "${env}")
endfunction()

flotilla_pytest(python_feed_fetch_test test_feed_fetch.py TIMEOUT 120)
flotilla_pytest(python_errors_test test_errors.py TIMEOUT 120)
flotilla_pytest(python_interrupt_test test_interrupt.py TIMEOUT 120)
flotilla_pytest(python_program_io_test test_program_io.py TIMEOUT 180)
flotilla_pytest(python_api_test test_api.py TIMEOUT 300)
flotilla_pytest(python_dataloader_test test_dataloader.py TIMEOUT 120)
flotilla_pytest(python_cnn_layers_test test_cnn_layers.py TIMEOUT 180)
flotilla_pytest(python_vision_test test_vision.py TIMEOUT 300)
flotilla_pytest(python_seeds_test test_seeds.py TIMEOUT 600)
flotilla_pytest(python_launch_test test_launch.py TIMEOUT 300)
flotilla_pytest(python_train_with_fleet_test test_train_with_fleet.py TIMEOUT 300)
flotilla_pytest(python_fleet_test test_fleet.py TIMEOUT 120)
flotilla_pytest(python_exec_strategy_test test_exec_strategy.py TIMEOUT 180)
flotilla_pytest(python_localsgd_test test_localsgd.py TIMEOUT 300)
flotilla_pytest(python_mpi_roles_test test_mpi_roles.py TIMEOUT 300)
flotilla_pytest(python_stubs_test test_stubs.py TIMEOUT 60)
flotilla_pytest(python_sequence_lod_test test_sequence_lod.py TIMEOUT 120)
