# The module table of ../shared/DESIGN.md ("Modules (folders) and what each may include"), the one
# copy the build checks against. MEGASIM_LAYER_<module> lists the modules that row names; a module
# may also use whatever those use (the closure), never anything else. DESIGN.md is shared and
# read-only here: a row that departs from it is said below and in its module's README.
# tests/check_layers.py reads the same lines to check every #include.
#
# calibrate_tool is the CUDA measuring executable (calibrate/gpu/), the one row DESIGN's table
# lacks (it lets calibrate/ use hw only): like the CLI it sits above the modules and reads and
# writes device profiles through io (calibrate/README.md).
set(MEGASIM_LAYERS engine hw net collective workload step run io plan cli calibrate calibrate_tool
    reports)
set(MEGASIM_LAYER_engine "")
set(MEGASIM_LAYER_hw engine)
set(MEGASIM_LAYER_net engine)
set(MEGASIM_LAYER_collective net hw)
set(MEGASIM_LAYER_workload hw)
set(MEGASIM_LAYER_step engine hw net collective workload)
set(MEGASIM_LAYER_run engine step)
set(MEGASIM_LAYER_io engine hw net collective workload step run)
set(MEGASIM_LAYER_plan io)
set(MEGASIM_LAYER_reports plan)
set(MEGASIM_LAYER_calibrate hw)
set(MEGASIM_LAYER_calibrate_tool calibrate io)
set(MEGASIM_LAYER_cli plan reports calibrate)

# megasim_layer_allowed(<module> <out-var>): every module <module> may use (the closure of its row).
function(megasim_layer_allowed module out)
  if(NOT module IN_LIST MEGASIM_LAYERS)
    message(FATAL_ERROR "layers: module '${module}' is not in cmake/layers.cmake (nor, then, in "
                        "DESIGN.md's module table): add its row to both")
  endif()
  set(frontier ${MEGASIM_LAYER_${module}})
  set(seen "")
  while(frontier)
    list(POP_FRONT frontier m)
    if(NOT m IN_LIST seen)
      list(APPEND seen ${m})
      list(APPEND frontier ${MEGASIM_LAYER_${m}})
    endif()
  endwhile()
  list(SORT seen)
  set(${out} "${seen}" PARENT_SCOPE)
endfunction()

# megasim_layer_violation(<from> <to> <out-var>): an empty string when <from> may use <to>, else
# the sentence that says why not.
function(megasim_layer_violation from to out)
  megasim_layer_allowed(${from} allowed)
  if(to STREQUAL from OR to IN_LIST allowed)
    set(${out} "" PARENT_SCOPE)
  else()
    string(REPLACE ";" ", " names "${allowed}")
    if(NOT names)
      set(names "nothing of megasim")
    endif()
    string(CONCAT why "megasim_${from} links megasim_${to}, but DESIGN.md's module table lets "
                      "${from} use only: ${names} (cmake/layers.cmake)")
    set(${out} "${why}" PARENT_SCOPE)
  endif()
endfunction()

# megasim_check_layers(): every megasim_<module> library declared by megasim_module() links only
# modules its row allows (direct link libraries, public or private). A wrong edge is a fatal
# configure error naming it.
function(megasim_check_layers)
  get_property(modules GLOBAL PROPERTY MEGASIM_MODULES)
  foreach(module IN LISTS modules)
    get_target_property(libs megasim_${module} LINK_LIBRARIES)
    get_target_property(ilibs megasim_${module} INTERFACE_LINK_LIBRARIES)
    foreach(lib IN LISTS libs ilibs)
      if(lib MATCHES "^megasim_(.+)$")
        megasim_layer_violation(${module} ${CMAKE_MATCH_1} why)
        if(why)
          message(FATAL_ERROR "layering: ${why}")
        endif()
      endif()
    endforeach()
  endforeach()
endfunction()
