# Cluster engines made by the tests themselves (tests/clusters/*.py, Python's
# unittest): a Slurm cluster of slurmctld + one slurmd per network-namespace
# host; and every pod of the Kubernetes manifests in deploy/k8s simulated on
# namespace hosts with its controller's environment. Exit code 77 = skipped
# (no root, engine not installed), with the reason printed.
set(FLOTILLA_CLUSTER_PYTHON /usr/bin/python3)
foreach(t slurm_test k8s_test mpi_test elastic_scale_test)
  add_test(NAME cluster_${t}
    COMMAND ${FLOTILLA_CLUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/clusters/${t}.py)
  set_tests_properties(cluster_${t} PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
    LABELS clusters
    ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};FLOTILLA_SOURCE_DIR=${PROJECT_SOURCE_DIR};OPENBLAS_NUM_THREADS=1")
endforeach()

# The Containerfile, built and run with podman where it can (skipped with the
# reason otherwise). A full build inside the image: it runs only with
# FLOTILLA_CONTAINER_TEST=1 and podman (scripts/install-deps.sh --container).
add_test(NAME cluster_container_test
  COMMAND ${FLOTILLA_CLUSTER_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/clusters/container_test.py)
set_tests_properties(cluster_container_test PROPERTIES TIMEOUT 4000 SKIP_RETURN_CODE 77
  LABELS clusters
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR};FLOTILLA_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
