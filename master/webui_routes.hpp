#pragma once
// The web UI: its pages' paths answer with index.html (the page's script reads the path and
// draws it), and /assets/ with the files beside it. Open to everyone, as the login page must be;
// everything the pages show comes from the REST API with the user's token.

#include <string>

#include "master/http/http_types.hpp"

namespace det::runtime {

struct webui_routes {
  /// Holds index.html and assets/ (the build's or the install's share/det/webui).
  std::string directory;

  void add_to(http_router& server);
};

/// Where the web UI lies next to det-node: <its directory>/../share/det/webui, which is where the
/// build puts it (build/share/...) and where `cmake --install` does.
std::string default_webui_directory();

} // namespace det::runtime
