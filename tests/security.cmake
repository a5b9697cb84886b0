# TLS for the parameter servers and the store with throw-away certificates
# made by openssl: wide_and_deep 2x2 under `flotilla launch --tls_*`,
# plaintext and foreign clients refused.
flotilla_test(tls_test
  SOURCES tls_test.cc
  DEPS launch_test_util flotilla_ps flotilla_comm PRIVATE_HEADERS ps
  TIMEOUT 300 LABELS security)
add_dependencies(tls_test flotilla wide_and_deep launch_probe)
