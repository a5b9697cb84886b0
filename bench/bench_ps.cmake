# Parameter-server RPC cost vs raw gRPC echo (issue: parameter server, part a).
find_package(nlohmann_json REQUIRED)
add_executable(bench_ps bench_ps.cc)
target_link_libraries(bench_ps PRIVATE flotilla_ps nlohmann_json::nlohmann_json)
