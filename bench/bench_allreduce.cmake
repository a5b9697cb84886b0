# bench_allreduce and its baselines (issue: collective communication).
find_package(nlohmann_json REQUIRED)
find_package(Gloo REQUIRED)
add_executable(bench_allreduce bench_allreduce.cc allreduce_worker.cc)
target_link_libraries(bench_allreduce PRIVATE flotilla_comm flotilla_testing_process
                      nlohmann_json::nlohmann_json)
flotilla_private_headers(bench_allreduce comm)

add_executable(gloo_allreduce baselines/gloo_allreduce.cc)
target_link_libraries(gloo_allreduce PRIVATE gloo Threads::Threads)
add_dependencies(bench_allreduce gloo_allreduce)

find_package(MPI COMPONENTS CXX)
if(MPI_CXX_FOUND)
  add_executable(mpi_allreduce baselines/mpi_allreduce.cc)
  target_link_libraries(mpi_allreduce PRIVATE MPI::MPI_CXX)
  add_dependencies(bench_allreduce mpi_allreduce)
endif()
