#pragma once

#include <string>

namespace det::tools {

class rest_client;

/// `det preview-search CONFIG [--json]`: validates the file locally, then asks
/// the master for the plan and prints how many trials stop at which length.
int preview_search(rest_client& master, const std::string& config_path, bool json);

} // namespace det::tools
