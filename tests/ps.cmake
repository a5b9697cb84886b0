# Parameter-server multi-process tests: server processes started and ended by the test.
add_executable(ps_test_server ps_test_server.cc)
target_link_libraries(ps_test_server PRIVATE flotilla_ps)
set_target_properties(ps_test_server PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

flotilla_test(ps_multiprocess_test
  SOURCES ps_multiprocess_test.cc
  DEPS flotilla_ps flotilla_testing_process
  TIMEOUT 180)
add_dependencies(ps_multiprocess_test ps_test_server)
