# megasim_module(NAME SOURCES ... [DEPS module ...] [LIBS target ...])
#
# Declares one module of the layered architecture (../shared/DESIGN.md, "Modules") as a
# static library `megasim_<NAME>`. A module's headers are reachable as "<NAME>/header.h" only
# through a per-module include root that holds nothing but a link to that module's folder, so
# a file can include the headers of exactly the modules its target links: an include of a
# module that DEPS does not name fails to compile. That is how the layering is enforced; and
# megasim_check_layers() (cmake/layers.cmake), run once every module is declared, holds each
# module's DEPS to DESIGN's table.
function(megasim_module name)
  cmake_parse_arguments(ARG "" "DIR" "SOURCES;DEPS;LIBS" ${ARGN})
  if(NOT ARG_DIR)
    set(ARG_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  set(root "${CMAKE_BINARY_DIR}/module_include/${name}")
  file(MAKE_DIRECTORY "${root}")
  if(NOT EXISTS "${root}/${name}")
    file(CREATE_LINK "${ARG_DIR}" "${root}/${name}" SYMBOLIC)
  endif()
  megasim_layer_allowed(${name} unused)  # fails now for a module missing from the table
  set_property(GLOBAL APPEND PROPERTY MEGASIM_MODULES ${name})
  add_library(megasim_${name} STATIC ${ARG_SOURCES})
  target_include_directories(megasim_${name} PUBLIC "${root}")
  foreach(dep IN LISTS ARG_DEPS)
    target_link_libraries(megasim_${name} PUBLIC megasim_${dep})
  endforeach()
  if(ARG_LIBS)
    target_link_libraries(megasim_${name} PUBLIC ${ARG_LIBS})
  endif()
endfunction()
