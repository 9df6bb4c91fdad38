# stoker_feature_unavailable(NAME OPTION WHY...): inside a function that finds an optional
# feature, whose `mode` is AUTO or ON, where the feature cannot be built: for AUTO, says
# "NAME: off (WHY)" in one line and returns from that function; for ON, stops the configure
# saying WHY and that -DOPTION=OFF builds without it. WHY's parts are joined.
macro(stoker_feature_unavailable name option)
  string(CONCAT _stoker_why ${ARGN})
  if(mode STREQUAL "AUTO")
    message(STATUS "${name}: off (${_stoker_why})")
    return()
  endif()
  message(FATAL_ERROR " stoker: ${_stoker_why}, or build with -D${option}=OFF")
endmacro()
