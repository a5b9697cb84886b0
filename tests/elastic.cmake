# Elastic jobs: the etcd client and the elastic launcher against a real etcd
# (Debian's etcd-server) started by each test on loopback.
add_library(elastic_test_util STATIC ${CMAKE_CURRENT_LIST_DIR}/elastic_test_util.cc)
target_include_directories(elastic_test_util PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(elastic_test_util PUBLIC flotilla_launch launch_test_util)
flotilla_private_headers(elastic_test_util launch)

flotilla_test(elastic_etcd_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/elastic_etcd_test.cc ${CMAKE_CURRENT_LIST_DIR}/elastic_membership_test.cc
          ${CMAKE_CURRENT_LIST_DIR}/elastic_rendezvous_test.cc
  DEPS elastic_test_util PRIVATE_HEADERS launch
  TIMEOUT 120 LABELS elastic)

# Launchers on loopback training train_with_fleet through losses and rejoins.
flotilla_test(elastic_launch_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/elastic_launch_test.cc
  DEPS elastic_test_util flotilla_io PRIVATE_HEADERS launch
  TIMEOUT 300 LABELS elastic RUN_SERIAL)
add_dependencies(elastic_launch_test flotilla train_with_fleet)
