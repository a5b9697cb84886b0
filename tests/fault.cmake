# Fault loops (tests/fault/fault_loop.py): faults injected into running jobs
# — kill -9 of trainers, servers and launchers (PS sync/async/GEO, two
# network-namespace hosts, an etcd-backed elastic job), SIGSTOP, a full
# checkpoint disk, a dropped link — each checked for no hang, the culprit
# named, nothing left behind and a loadable last checkpoint. ctest runs a
# short loop (one or two faults per scenario); the long run is
#   python3 tests/fault/fault_loop.py --budget_s 1500 --faults_per_scenario 40
# Exit code 77 = skipped (nothing could run here: no root, no etcd), with the
# reasons printed; a program of this tree that is not built fails it.
add_test(NAME fault_loop_short
  COMMAND ${FLOTILLA_CLUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/fault/fault_loop.py
          --budget_s 120 --faults_per_scenario 2)
set_tests_properties(fault_loop_short PROPERTIES TIMEOUT 400 SKIP_RETURN_CODE 77
  LABELS fault RUN_SERIAL TRUE
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1")

# Fault tolerance without restarts (--fault_tolerance step): a 3-rank job
# loses a rank to SIGKILL; the survivors keep their pids, re-form in-process,
# lose at most one step and end bit-identical (about 10 s).
add_test(NAME fault_tolerance_step
  COMMAND ${FLOTILLA_CLUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/fault/ft_step_test.py)
set_tests_properties(fault_tolerance_step PROPERTIES TIMEOUT 240 LABELS fault
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1")
# The same from Python: fleet.run_step in tests/fault/ft_step_train.py.
add_test(NAME fault_tolerance_step_python
  COMMAND ${FLOTILLA_CLUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/fault/ft_step_test.py --python)
set_tests_properties(fault_tolerance_step_python PROPERTIES TIMEOUT 240 LABELS fault
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};OPENBLAS_NUM_THREADS=1")
