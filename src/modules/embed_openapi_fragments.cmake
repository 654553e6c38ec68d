# Generates a C++ source defining engram::OpenApiFragments(): the OpenAPI fragments listed in
# INPUTS (paths relative to ROOT, ','-separated), in order, each as {its path, its text}.
include(${CMAKE_CURRENT_LIST_DIR}/../common/raw_string_literal.cmake)
string(REPLACE "," ";" inputs "${INPUTS}")
set(body "")
foreach(input IN LISTS inputs)
  file(READ ${ROOT}/${input} text)
  engram_raw_string_literal(literal "${text}" engram_text "${input}")
  string(APPEND body "      {\"src/${input}\", ${literal}},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp
     "// Generated from the *.openapi.json fragments. Do not edit.\n"
     "#include \"modules/openapi_fragments.h\"\n\n"
     "namespace engram {\n\n"
     "std::span<const OpenApiFragment> OpenApiFragments() {\n"
     "  static constexpr OpenApiFragment kFragments[] = {\n${body}  };\n"
     "  return kFragments;\n}\n\n}  // namespace engram\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
