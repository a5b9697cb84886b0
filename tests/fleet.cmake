# Fleet: collective training tests (ranks as threads, and processes).
add_library(fleet_test_util STATIC fleet_test_util.cc)
target_link_libraries(fleet_test_util PUBLIC flotilla_fleet)
flotilla_private_headers(fleet_test_util comm)

flotilla_test(fleet_collective_test
  SOURCES fleet_collective_test.cc
  DEPS fleet_test_util
  TIMEOUT 300)

flotilla_test(fleet_save_test
  SOURCES fleet_save_test.cc
  DEPS fleet_test_util
  TIMEOUT 120)

# train_with_fleet under flotilla launch and mpirun.
flotilla_test(fleet_process_test
  SOURCES fleet_process_test.cc
  DEPS launch_test_util
  TIMEOUT 300)
add_dependencies(fleet_process_test flotilla train_with_fleet)

# Convolutional networks data-parallel: sync_batch_norm equivalence.
flotilla_test(fleet_cnn_test
  SOURCES fleet_cnn_test.cc
  DEPS fleet_test_util flotilla_models
  TIMEOUT 120)

# Seed 001's --model=ResNet50 job as processes (launch, flags, refusals).
flotilla_test(cnn_process_test
  SOURCES cnn_process_test.cc
  DEPS launch_test_util
  TIMEOUT 400)
add_dependencies(cnn_process_test flotilla train_with_fleet)

# ResNet blocks against PyTorch 1.13 (python3-torch from install-deps.sh --bench).
flotilla_test(resnet_blocks_test
  SOURCES resnet_blocks_test.cc
  DEPS launch_test_util flotilla_models nlohmann_json::nlohmann_json
  TIMEOUT 120)
