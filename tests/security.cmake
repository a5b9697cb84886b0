# TLS for the parameter servers and the store with throw-away certificates
# made by openssl: wide_and_deep 2x2 under `flotilla launch --tls_*`,
# plaintext and foreign clients refused.
flotilla_test(tls_test
  SOURCES tls_test.cc
  DEPS launch_test_util flotilla_ps flotilla_comm PRIVATE_HEADERS ps
  TIMEOUT 300 LABELS security)
add_dependencies(tls_test flotilla wide_and_deep launch_probe)

# The store of a real launcher under unauthenticated floods (scripts/store_flood.py
# at test size): closures within the hello deadline, RSS within 16 MB of idle.
if(NOT FLOTILLA_PYTHON)
  set(FLOTILLA_PYTHON /usr/bin/python3)
endif()
add_test(NAME security_store_flood_test
  COMMAND ${FLOTILLA_PYTHON} -m pytest -q -p no:cacheprovider -s
          ${CMAKE_CURRENT_LIST_DIR}/security/test_store_flood.py)
set_tests_properties(security_store_flood_test PROPERTIES TIMEOUT 120 LABELS security
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR}")

# Every port, count and size from a flag or a variable is range-checked:
# rc 2 and a message naming it, before anything starts.
add_test(NAME security_bad_flags_test
  COMMAND ${FLOTILLA_PYTHON} -m pytest -q -p no:cacheprovider -s
          ${CMAKE_CURRENT_LIST_DIR}/security/test_bad_flags.py)
set_tests_properties(security_bad_flags_test PROPERTIES TIMEOUT 120 LABELS security
  ENVIRONMENT "FLOTILLA_BUILD_DIR=${PROJECT_BINARY_DIR}")
