find_package(CLI11 CONFIG REQUIRED)
# Observability: hangs diagnosed, timelines merged, metrics parsed, the
# dashboard in a browser (tests/observe_*.cc, tests/observe/*.py).
add_executable(hang_worker ${CMAKE_CURRENT_LIST_DIR}/observe/hang_worker.cc)
target_link_libraries(hang_worker PRIVATE flotilla_api flotilla_comm CLI11::CLI11)

if(NOT FLOTILLA_PYTHON)
  set(FLOTILLA_PYTHON /usr/bin/python3)
endif()
add_test(NAME observe_timeline_test
  COMMAND ${FLOTILLA_PYTHON} -m pytest -q -p no:cacheprovider ${CMAKE_CURRENT_LIST_DIR}/observe/test_timeline.py)
set_tests_properties(observe_timeline_test PROPERTIES TIMEOUT 600 LABELS observe
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")

flotilla_test(observe_hang_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/observe_hang_test.cc
  DEPS launch_test_util TIMEOUT 300 LABELS observe)
add_dependencies(observe_hang_test flotilla hang_worker wide_and_deep)
foreach(t metrics browser)
  add_test(NAME observe_${t}_test
    COMMAND ${FLOTILLA_PYTHON} -m pytest -q -p no:cacheprovider -rs
            ${CMAKE_CURRENT_LIST_DIR}/observe/test_${t}.py)
  set_tests_properties(observe_${t}_test PROPERTIES TIMEOUT 600 LABELS observe
    ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
endforeach()

flotilla_test(observe_launch_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/observe_launch_test.cc
  DEPS launch_test_util TIMEOUT 240 LABELS observe)
add_dependencies(observe_launch_test flotilla launch_probe)

# Slow HTTP clients, listeners' addresses, the dashboard's token (issue 32).
add_test(NAME observe_http_test
  COMMAND ${FLOTILLA_PYTHON} -m pytest -q -s -p no:cacheprovider -rs
          ${CMAKE_CURRENT_LIST_DIR}/observe/test_http_hardening.py)
set_tests_properties(observe_http_test PROPERTIES TIMEOUT 300 LABELS observe
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1;${FLOTILLA_TEST_SECRET}")
