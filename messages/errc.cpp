#include "messages/errc.hpp"

namespace det {

std::string to_string(errc x) {
  switch (x) {
    case errc::unschedulable: return "unschedulable";
    case errc::stale_run: return "stale_run";
    case errc::refused: return "refused";
    case errc::not_found: return "not_found";
    case errc::invalid_input: return "invalid_input";
    case errc::storage_failed: return "storage_failed";
    case errc::unauthenticated: return "unauthenticated";
    case errc::forbidden: return "forbidden";
    case errc::malformed_message: return "malformed_message";
    case errc::unavailable: return "unavailable";
    case errc::too_many_requests: return "too_many_requests";
    case errc::too_large: return "too_large";
    case errc::upstream_failed: return "upstream_failed";
    case errc::internal: return "internal";
  }
  return "errc(" + std::to_string(static_cast<int>(x)) + ")";
}

caf::error make_error(errc code) {
  return {static_cast<uint8_t>(code), errc_category};
}

caf::error make_error(errc code, std::string sentence) {
  return {static_cast<uint8_t>(code), errc_category, caf::make_message(std::move(sentence))};
}

} // namespace det
