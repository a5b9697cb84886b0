# Parameter-server training end to end: the DistributeTranspiler, the Fleet
# PS API, dist_fit_a_line and wide_and_deep as processes (ended by pid).
add_executable(ps_integration_worker ps_integration_worker.cc)
target_link_libraries(ps_integration_worker PRIVATE flotilla_fleet nlohmann_json::nlohmann_json)
set_target_properties(ps_integration_worker PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests)

flotilla_test(ps_integration_test
  SOURCES ps_integration_test.cc
  DEPS launch_test_util
  TIMEOUT 400)
add_dependencies(ps_integration_test ps_integration_worker flotilla dist_fit_a_line fit_a_line wide_and_deep)

# Sparse tables at CTR scale: admission/shrink AUC, ssd tables saved and restarted.
flotilla_test(ps_tables_integration_test
  SOURCES ps_tables_integration_test.cc
  DEPS launch_test_util
  TIMEOUT 300)
add_dependencies(ps_tables_integration_test flotilla wide_and_deep)

# Heterogeneous PS: heter workers run wide_and_deep's dense part.
flotilla_test(ps_heter_test
  SOURCES ps_heter_test.cc
  DEPS launch_test_util
  TIMEOUT 600)
add_dependencies(ps_heter_test flotilla wide_and_deep)
