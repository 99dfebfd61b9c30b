#include "agent/notebook_activity.hpp"

#include <nlohmann/json.hpp>

#include "agent/service_probe.hpp"

namespace det::runtime {

notebook_activity::notebook_activity(int port, std::string api_path, std::string token, pb::NotebookIdleType type)
    : port_(port), api_path_(std::move(api_path)), token_(std::move(token)), type_(type) {}

bool notebook_activity::in_use() {
  auto get = [&](const std::string& what) {
    auto body = http_get(port_, api_path_ + "/" + what + "?token=" + token_);
    return body ? nlohmann::json::parse(*body, nullptr, false) : nlohmann::json(nlohmann::json::value_t::discarded);
  };
  const auto kernels = get("kernels");
  if (!kernels.is_array()) return true;
  switch (type_) {
    case pb::NOTEBOOK_IDLE_TYPE_KERNEL_CONNECTIONS:
      for (const auto& k : kernels)
        if (k.value("connections", 0) > 0) return true;
      return false;
    case pb::NOTEBOOK_IDLE_TYPE_ACTIVITY: {
      for (const auto& k : kernels)
        if (k.value("execution_state", "") == "busy") return true;
      const auto status = get("status");
      if (!status.is_object()) return true;
      auto seen = status.value("last_activity", "");
      const bool moved = !last_activity_.empty() && seen != last_activity_;
      last_activity_ = std::move(seen);
      return moved;
    }
    default: {
      if (!kernels.empty()) return true;
      const auto terminals = get("terminals");
      return !terminals.is_array() || !terminals.empty();
    }
  }
}

} // namespace det::runtime
