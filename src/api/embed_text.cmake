# Generates a C++ source defining `const char* FUNCTION()` returning the contents of INPUT.
file(READ ${INPUT} text)
string(FIND "${text}" ")engram_text\"" at)
if(NOT at EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's delimiter )engram_text\"")
endif()
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT}. Do not edit.\nnamespace engram {\nconst char* ${FUNCTION}() {\n  return R\"engram_text(${text})engram_text\";\n}\n}  // namespace engram\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
