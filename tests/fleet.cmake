# Fleet: collective training tests (ranks as threads, and processes).
add_library(fleet_test_util STATIC fleet_test_util.cc)
target_link_libraries(fleet_test_util PUBLIC flotilla_fleet)

flotilla_test(fleet_collective_test
  SOURCES fleet_collective_test.cc
  DEPS fleet_test_util
  TIMEOUT 300)
