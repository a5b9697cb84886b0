# Example smoke runs: the examples train and reach the issue's metrics.
find_package(nlohmann_json REQUIRED)
flotilla_test(examples_test
  SOURCES examples_test.cc
  DEPS flotilla_testing_process nlohmann_json::nlohmann_json
  TIMEOUT 600)
add_dependencies(examples_test fit_a_line mlp)
