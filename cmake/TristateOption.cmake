# depengine_tristate_option(NAME DOC): a cache string NAME that is ON (the
# feature is required), OFF (left out) or AUTO (the default: built when its
# dependencies are found); any other value stops the configuration.
function(depengine_tristate_option name doc)
  set(${name} AUTO CACHE STRING "${doc}: ON, OFF or AUTO")
  set_property(CACHE ${name} PROPERTY STRINGS ON OFF AUTO)
  if(NOT ${name} MATCHES "^(ON|OFF|AUTO)$")
    message(FATAL_ERROR "${name} must be ON, OFF or AUTO, not '${${name}}'")
  endif()
endfunction()
