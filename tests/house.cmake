# Checks of the tree itself, run by `make test`: every file path the docs cite
# exists (scripts/check-doc-paths.py).
add_test(NAME docs_paths_test
  COMMAND ${FLOTILLA_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/check-doc-paths.py ${PROJECT_SOURCE_DIR})
set_tests_properties(docs_paths_test PROPERTIES TIMEOUT 60 LABELS house)
