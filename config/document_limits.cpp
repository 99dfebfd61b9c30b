#include "config/document_limits.hpp"

#include <string>

#include "config/config_error.hpp"

namespace det::config {

void check_document_size(std::string_view text, std::string_view source_path) {
  if (text.size() > max_document_bytes)
    throw config_error(std::string(source_path) + ": the config is " + std::to_string(text.size()) +
                       " bytes; det reads configs of at most " + std::to_string(max_document_bytes) + " bytes");
}

}  // namespace det::config
