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
