# Multi-process and multi-host tests of the comm layer (issue: collective communication).
add_executable(comm_rank_helper comm_rank_helper.cc)
set_target_properties(comm_rank_helper PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)
target_link_libraries(comm_rank_helper PRIVATE flotilla_comm)

flotilla_test(comm_multiprocess_test
  SOURCES comm_multiprocess_test.cc comm_test_util.cc
  DEPS flotilla_comm flotilla_testing_process PRIVATE_HEADERS comm
  TIMEOUT 600 RUN_SERIAL)
add_dependencies(comm_multiprocess_test comm_rank_helper)

flotilla_test(comm_netns_test
  SOURCES comm_netns_test.cc comm_test_util.cc
  DEPS flotilla_comm flotilla_testing_process
  TIMEOUT 600 RUN_SERIAL)
add_dependencies(comm_netns_test comm_rank_helper)
