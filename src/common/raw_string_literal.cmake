# engram_raw_string_literal(OUT TEXT DELIMITER SOURCE): sets OUT to TEXT as a C++ raw string
# literal, R"DELIMITER(TEXT)DELIMITER". A TEXT holding the closing sequence )DELIMITER" would end
# the literal early and compile into something else, so the build stops instead, naming SOURCE.
# Included by the scripts that embed files into the binary (run with cmake -P).
function(engram_raw_string_literal out text delimiter source)
  string(FIND "${text}" ")${delimiter}\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${source} holds the raw string's delimiter )${delimiter}\"")
  endif()
  set(${out} "R\"${delimiter}(${text})${delimiter}\"" PARENT_SCOPE)
endfunction()
