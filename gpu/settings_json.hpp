#pragma once
// Reading a trial's hyperparameters and [data] settings from their JSON text, with one set of
// rules and sentences for every built-in trial (gpu/trial_settings.cpp, gpu/gpt_settings.cpp):
// a wrong value is a std::runtime_error that names the key and what it must be.

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace det::harness::settings_json {

/// `text` as a JSON object ("" and null: an empty one); `what` names it in the error ("hyperparameters").
nlohmann::json parse_object(const std::string& text, const std::string& what);

[[noreturn]] void wrong_type(const std::string& what, const std::string& key, const std::string& wanted,
                             const nlohmann::json& value);

/// An integer, or a double that is one: searchers may hand integer hyperparameters over as 64.0.
std::optional<int64_t> as_integer(const nlohmann::json& value);

/// Whether `obj` has `key` with a value other than null.
bool has(const nlohmann::json& obj, const std::string& key);

/// obj[key] (`what`: "hyperparameter" or "data setting"), or `fallback` when absent or null.
double get_number(const nlohmann::json& obj, const std::string& what, const std::string& key, double fallback);
int64_t get_integer(const nlohmann::json& obj, const std::string& what, const std::string& key, int64_t fallback);
std::string get_string(const nlohmann::json& obj, const std::string& what, const std::string& key,
                       const std::string& fallback);

/// Throws std::runtime_error(sentence) unless `ok`.
void require(bool ok, const std::string& sentence);

}  // namespace det::harness::settings_json
