# Generates a C++ source defining engram::OpenApiFragments(): the OpenAPI fragments listed in
# INPUTS (paths relative to ROOT, ','-separated), in order, each as {its path, its text}.
string(REPLACE "," ";" inputs "${INPUTS}")
set(body "")
foreach(input IN LISTS inputs)
  file(READ ${ROOT}/${input} text)
  string(FIND "${text}" ")engram_text\"" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${input} holds the raw string's delimiter )engram_text\"")
  endif()
  string(APPEND body "      {\"src/${input}\", R\"engram_text(${text})engram_text\"},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp
     "// Generated from the *.openapi.json fragments. Do not edit.\n"
     "#include \"modules/openapi_fragments.h\"\n\n"
     "namespace engram {\n\n"
     "std::span<const OpenApiFragment> OpenApiFragments() {\n"
     "  static constexpr OpenApiFragment kFragments[] = {\n${body}  };\n"
     "  return kFragments;\n}\n\n}  // namespace engram\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
