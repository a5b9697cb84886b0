# Parameter-server RPC cost vs raw gRPC echo (issue: parameter server, part a).
# Then sparse-table keys/s per core next to std::unordered_map and absl's Swiss table.
find_package(nlohmann_json REQUIRED)
find_package(absl REQUIRED)
add_executable(bench_ps bench_ps.cc bench_ps_table.cc)
target_link_libraries(bench_ps PRIVATE flotilla_ps nlohmann_json::nlohmann_json absl::flat_hash_map)
