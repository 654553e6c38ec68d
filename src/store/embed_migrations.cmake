# Generates a C++ source holding every migration file as a raw string literal.
# Inputs: MIGRATION_DIR, OUTPUT, FUNCTION (e.g. SqliteMigrations).
file(GLOB files "${MIGRATION_DIR}/*.sql")
list(SORT files)
set(body "")
foreach(f ${files})
  get_filename_component(name ${f} NAME)
  string(REGEX MATCH "^[0-9]+" version ${name})
  math(EXPR version "${version}")
  file(READ ${f} sql)
  string(APPEND body "      {${version}, \"${name}\", R\"engram_sql(${sql})engram_sql\"},\n")
endforeach()
file(WRITE ${OUTPUT}.tmp "// Generated from ${MIGRATION_DIR} by embed_migrations.cmake. Do not edit.\n#include \"store/migrations.h\"\n\nnamespace engram {\n\nconst std::vector<Migration>& ${FUNCTION}() {\n  static const std::vector<Migration> kMigrations = {\n${body}  };\n  return kMigrations;\n}\n\n}  // namespace engram\n")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
