#include "modules/openapi_fragments.h"

#include <stdlib.h>

#include <filesystem>

#include "api/auth.h"
#include "api/metrics.h"
#include "api/router.h"
#include "common/build_info.h"
#include "common/kernel_family.h"
#include "config/serve_options.h"
#include "modules/server_modules.h"

namespace engram {

Result<std::string> GenerateServerOpenApi() {
  std::error_code ec;
  const std::filesystem::path tmp = std::filesystem::temp_directory_path(ec);
  if (ec) return Status::Internal("no temporary directory: " + ec.message());
  std::string dir = (tmp / "engram_openapi_XXXXXX").string();
  if (mkdtemp(dir.data()) == nullptr)
    return Status::Internal("cannot create a directory in " + tmp.string());
  ServeOptions options;
  options.data_dir = dir + "/data";
  options.embedder = "none";  // the routes do not depend on the model
  options.ocr = false;
  auto auth = ApiKeyAuth::FromSpecs({});
  if (!auth.ok()) return auth.status();
  Result<std::string> document = Status::Internal("the modules did not build");
  {
    Modules m;
    Status built = BuildModules(options, KernelFamily::kScalar, *auth, m);
    if (built.ok()) {
      Metrics metrics;
      Router router;
      RegisterRoutes(router, m, metrics, *auth);
      document = GenerateOpenApi(router, OpenApiFragments(), GetBuildInfo().version);
      ShutdownModules(m);
    } else {
      document = built;
    }
  }
  std::filesystem::remove_all(dir, ec);
  return document;
}

}  // namespace engram
