# FLOTILLA_SANITIZE=address,undefined (or thread): every target built with
# those sanitizers (cmake -B build-asan -DFLOTILLA_SANITIZE=address,undefined).
# UBSan findings abort the test that hit them instead of only printing.
set(FLOTILLA_SANITIZE "" CACHE STRING "sanitizers for every target, e.g. address,undefined")
if(FLOTILLA_SANITIZE)
  add_compile_options(-fsanitize=${FLOTILLA_SANITIZE} -fno-omit-frame-pointer -g1)
  add_link_options(-fsanitize=${FLOTILLA_SANITIZE})
  if(FLOTILLA_SANITIZE MATCHES "undefined")
    add_compile_options(-fno-sanitize-recover=undefined)
  endif()
endif()
