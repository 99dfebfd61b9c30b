#include "gpu/settings_json.hpp"

#include <cmath>
#include <stdexcept>

namespace det::harness::settings_json {

using nlohmann::json;

json parse_object(const std::string& text, const std::string& what) {
  if (text.empty()) return json::object();
  json parsed = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_discarded()) throw std::runtime_error("The " + what + " are not valid JSON: " + text);
  if (parsed.is_null()) return json::object();
  if (!parsed.is_object())
    throw std::runtime_error("The " + what + " must be a JSON object, not " + parsed.dump() + ".");
  return parsed;
}

void wrong_type(const std::string& what, const std::string& key, const std::string& wanted, const json& value) {
  throw std::runtime_error("The " + what + " '" + key + "' must be " + wanted + ", not " + value.dump() + ".");
}

std::optional<int64_t> as_integer(const json& value) {
  if (value.is_number_integer()) return value.get<int64_t>();
  if (value.is_number_float()) {
    double d = value.get<double>();
    if (std::isfinite(d) && std::floor(d) == d) return static_cast<int64_t>(d);
  }
  return std::nullopt;
}

bool has(const json& obj, const std::string& key) {
  auto it = obj.find(key);
  return it != obj.end() && !it->is_null();
}

double get_number(const json& obj, const std::string& what, const std::string& key, double fallback) {
  if (!has(obj, key)) return fallback;
  const json& value = obj.at(key);
  if (!value.is_number()) wrong_type(what, key, "a number", value);
  return value.get<double>();
}

int64_t get_integer(const json& obj, const std::string& what, const std::string& key, int64_t fallback) {
  if (!has(obj, key)) return fallback;
  auto value = as_integer(obj.at(key));
  if (!value) wrong_type(what, key, "an integer", obj.at(key));
  return *value;
}

std::string get_string(const json& obj, const std::string& what, const std::string& key, const std::string& fallback) {
  if (!has(obj, key)) return fallback;
  const json& value = obj.at(key);
  if (!value.is_string()) wrong_type(what, key, "a string", value);
  return value.get<std::string>();
}

void require(bool ok, const std::string& sentence) {
  if (!ok) throw std::runtime_error(sentence);
}

}  // namespace det::harness::settings_json
