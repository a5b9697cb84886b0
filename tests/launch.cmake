# The launcher's process-level tests: they run build/bin/flotilla with the
# probe program (tests/probe) as the training program.
find_package(nlohmann_json REQUIRED)

add_executable(launch_probe ${CMAKE_CURRENT_LIST_DIR}/probe/probe.cc)
target_link_libraries(launch_probe PRIVATE flotilla_comm nlohmann_json::nlohmann_json)
flotilla_private_headers(launch_probe comm)

add_library(launch_test_util STATIC ${CMAKE_CURRENT_LIST_DIR}/launch_test_util.cc)
target_include_directories(launch_test_util PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(launch_test_util PUBLIC flotilla_testing_process GTest::gtest nlohmann_json::nlohmann_json)

foreach(t launch_cli_test launch_abort_test launch_ps_test launch_multinode_test launch_shm_test
        launch_secret_test launch_files_test)
  flotilla_test(${t} SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}.cc DEPS launch_test_util
    TIMEOUT 240 LABELS launch)
  add_dependencies(${t} flotilla launch_probe)
endforeach()
set_tests_properties(launch_multinode_test PROPERTIES RUN_SERIAL TRUE)
target_link_libraries(launch_secret_test PRIVATE flotilla_comm)
add_dependencies(launch_secret_test train_with_fleet)

# Jobs started by torchrun-style variables, Slurm, Kubernetes, mpirun.
flotilla_test(engine_env_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/engine_env_test.cc
  DEPS launch_test_util TIMEOUT 120 LABELS launch)
add_dependencies(engine_env_test flotilla train_with_fleet)
# The multi-node test also runs the examples across its two hosts.
add_dependencies(launch_multinode_test train_with_fleet wide_and_deep dist_fit_a_line)
