cmake_minimum_required(VERSION 3.25)
# cmake -P tests/check_layers_table.cmake: the configure-time link check (cmake/layers.cmake) says
# no to forbidden edges and yes to allowed ones, so a wrong DEPS cannot slip through unnoticed.
include("${CMAKE_CURRENT_LIST_DIR}/../cmake/layers.cmake")
set(failures 0)
foreach(edge engine:io engine:hw hw:net net:hw workload:net workload:step step:run run:io io:plan
             plan:cli reports:cli calibrate:io calibrate:net calibrate_tool:cli)
  string(REPLACE ":" ";" pair "${edge}")
  megasim_layer_violation(${pair} why)
  if(NOT why)
    message("FAIL: ${edge} should be forbidden")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
foreach(edge hw:engine collective:engine collective:net step:collective run:step run:workload
             io:run plan:io reports:step reports:plan cli:calibrate cli:plan calibrate:hw
             calibrate_tool:io)
  string(REPLACE ":" ";" pair "${edge}")
  megasim_layer_violation(${pair} why)
  if(why)
    message("FAIL: ${edge} should be allowed: ${why}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()
if(failures)
  message(FATAL_ERROR "${failures} wrong answer(s) from the layer table")
endif()
message("layer table: every probed edge answered as DESIGN.md says")
