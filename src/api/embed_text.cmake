# Generates a C++ source defining `const char* FUNCTION()` returning the contents of INPUT.
include(${CMAKE_CURRENT_LIST_DIR}/../common/raw_string_literal.cmake)
file(READ ${INPUT} text)
engram_raw_string_literal(literal "${text}" engram_text "${INPUT}")
file(WRITE ${OUTPUT}.tmp "// Generated from ${INPUT}. Do not edit.\nnamespace engram {\nconst char* ${FUNCTION}() {\n  return ${literal};\n}\n}  // namespace engram\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
