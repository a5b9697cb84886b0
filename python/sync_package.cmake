# cmake -DSRC=<python/flotilla> -DDST=<build/python/flotilla> -P sync_package.cmake
# Makes DST's Python files those of SRC: copies new and changed ones, removes
# ones deleted from SRC (so the in-tree package never imports a stale module).
# Leaves everything else in DST (the extension module, __pycache__) alone.
cmake_minimum_required(VERSION 3.25)
file(GLOB_RECURSE src_files RELATIVE ${SRC} ${SRC}/*.py ${SRC}/*.pyi ${SRC}/py.typed)
file(GLOB_RECURSE dst_files RELATIVE ${DST} ${DST}/*.py ${DST}/*.pyi ${DST}/py.typed)
foreach(f ${dst_files})
  if(NOT f IN_LIST src_files)
    file(REMOVE ${DST}/${f})
  endif()
endforeach()
foreach(f ${src_files})
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${SRC}/${f} ${DST}/${f})
endforeach()
