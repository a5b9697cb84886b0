# Checks of the tree itself, run by `make test` (label house): every include
# keeps the layer rule of docs/layers.md (scripts/check_layers.py), and every
# file path the docs cite exists (scripts/check_doc_paths.py).
add_test(NAME layer_check
  COMMAND ${FLOTILLA_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py ${PROJECT_SOURCE_DIR})
add_test(NAME docs_paths_test
  COMMAND ${FLOTILLA_PYTHON} ${PROJECT_SOURCE_DIR}/scripts/check_doc_paths.py ${PROJECT_SOURCE_DIR})
set_tests_properties(layer_check docs_paths_test PROPERTIES TIMEOUT 60 LABELS house)
