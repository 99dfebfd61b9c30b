#include "gpu/checkpoint_files.hpp"

#include <nlohmann/json.hpp>

#include "auth/random_uuid.hpp"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace det::harness {

namespace fs = std::filesystem;

checkpoint_writer::checkpoint_writer(const std::string& root) : root_(root), uuid_(auth::random_uuid()) {
  partial_ = (fs::path(root) / (uuid_ + ".partial")).string();
  std::error_code error;
  fs::create_directories(partial_, error);
  if (error)
    throw std::runtime_error("Cannot create the checkpoint directory " + partial_ + ": " + error.message() + ".");
}

checkpoint_writer::~checkpoint_writer() {
  if (!committed_) {
    std::error_code ignored;
    fs::remove_all(partial_, ignored);
  }
}

saved_checkpoint checkpoint_writer::commit(const std::string& format, const progress& at) {
  saved_checkpoint saved{uuid_, at, {}};
  for (const auto& entry : fs::directory_iterator(partial_))
    if (entry.is_regular_file()) saved.resources[entry.path().filename().string()] = static_cast<int64_t>(entry.file_size());
  nlohmann::json metadata{{"uuid", uuid_},          {"format", format},        {"batches", at.batches},
                          {"records", at.records},  {"epochs", at.epochs},     {"files", saved.resources}};
  {
    std::ofstream out(fs::path(partial_) / "metadata.json");
    out << metadata.dump(2) << '\n';
    if (!out) throw std::runtime_error("Cannot write metadata.json of checkpoint " + uuid_ + ".");
  }
  saved.resources["metadata.json"] = static_cast<int64_t>(fs::file_size(fs::path(partial_) / "metadata.json"));
  std::error_code error;
  fs::rename(partial_, fs::path(root_) / uuid_, error);
  if (error) throw std::runtime_error("Cannot finish checkpoint " + uuid_ + ": " + error.message() + ".");
  committed_ = true;
  return saved;
}

namespace {

/// A whole number that fits int64_t: nlohmann's get<int64_t> converts any number, and a value
/// beyond int64_t's range (read as a double, say 1e58) would be undefined behaviour.
int64_t whole_number(const nlohmann::json& json, const char* key) {
  const auto& value = json.at(key);
  if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw std::runtime_error(std::string(key) + " is larger than " + std::to_string(INT64_MAX));
  if (!value.is_number_integer())
    throw std::runtime_error(std::string(key) + " is not a whole number: " + value.dump());
  return value.get<int64_t>();
}

}  // namespace

checkpoint_metadata read_checkpoint(const std::string& dir, const std::string& format) {
  auto path = fs::path(dir) / "metadata.json";
  std::ifstream in(path);
  if (!in) throw std::runtime_error("Checkpoint " + dir + " is missing: there is no " + path.string() + ".");
  checkpoint_metadata metadata;
  try {
    auto json = nlohmann::json::parse(in);
    metadata.uuid = json.at("uuid").get<std::string>();
    metadata.format = json.at("format").get<std::string>();
    metadata.at.batches = whole_number(json, "batches");
    metadata.at.records = whole_number(json, "records");
    metadata.at.epochs = json.at("epochs").get<double>();
  } catch (const std::exception& e) {
    throw std::runtime_error("Checkpoint " + dir + " is corrupt: its metadata.json cannot be read (" + e.what() +
                             ").");
  }
  if (metadata.format != format)
    throw std::runtime_error("Checkpoint " + dir + " holds a " + metadata.format + " trial, not " + format + ".");
  return metadata;
}

} // namespace det::harness
