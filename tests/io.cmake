# io with real models: trained programs saved, resumed and served in a fresh process.
flotilla_test(io_integration_test
  SOURCES io_integration_test.cc
  DEPS flotilla_io flotilla_api flotilla_testing_process PRIVATE_HEADERS io)
add_dependencies(io_integration_test io_inference_helper)

# train_from_dataset: Hogwild workers over MultiSlot files, checked against Executor::Run.
flotilla_test(dataset_train_test
  SOURCES dataset_train_test.cc
  DEPS flotilla_io flotilla_api)
