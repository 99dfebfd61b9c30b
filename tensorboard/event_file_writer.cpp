#include "tensorboard/event_file_writer.hpp"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "tensorboard/masked_crc32c.hpp"

namespace det::tensorboard {

namespace {

// Tells apart the files that writers of one process open in the same second.
std::atomic<int> files_opened{0};

std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

}  // namespace

std::string new_event_file_name() {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%010lld", static_cast<long long>(std::time(nullptr)));
  return std::string("events.out.tfevents.") + seconds + "." + host_name() + "." + std::to_string(::getpid()) + "." +
         std::to_string(files_opened++);
}

double wall_time_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

event_file_writer::event_file_writer(const std::string& directory) {
  std::error_code error;
  std::filesystem::create_directories(directory, error);
  if (error)
    throw std::runtime_error("cannot create the TensorBoard directory " + directory + ": " + error.message());
  path_ = directory + "/" + new_event_file_name();
  file_ = std::fopen(path_.c_str(), "wbxe");  // x: never another writer's file; e: not inherited by children
  if (!file_)
    throw std::runtime_error("cannot create the TensorBoard event file " + path_ + ": " + std::strerror(errno));
  start();
}

event_file_writer::event_file_writer(int fd, std::string path) : path_(std::move(path)) {
  file_ = ::fdopen(fd, "wb");
  if (!file_) {
    const int error = errno;
    ::close(fd);
    throw std::runtime_error("cannot write the TensorBoard event file " + path_ + ": " + std::strerror(error));
  }
  start();
}

// The file version first, flushed, so a reader knows the file from the start.
void event_file_writer::start() {
  try {
    write_record(file_version_event(wall_time_now()));
    flush();
  } catch (...) {
    std::fclose(file_);  // the destructor does not run for a constructor that throws
    throw;
  }
}

event_file_writer::~event_file_writer() {
  if (file_) std::fclose(file_);
}

void event_file_writer::write_session_start(const std::map<std::string, hparam_value>& hparams,
                                            double start_time_secs) {
  write_record(session_start_event(wall_time_now(), hparams, start_time_secs));
  flush_if_due();
}

void event_file_writer::write_scalars(std::string_view prefix, int64_t step, double wall_time,
                                      const std::map<std::string, double>& metrics) {
  std::vector<scalar_value> scalars;
  scalars.reserve(metrics.size());
  for (const auto& [name, value] : metrics) {
    auto tag = std::string(prefix) + "/" + name;
    const auto metadata = tagged_.insert(tag).second ? tag_metadata::attach : tag_metadata::omit;
    scalars.push_back({std::move(tag), static_cast<float>(value), metadata});
  }
  write_record(scalars_event(wall_time, step, scalars));
  flush_if_due();
}

void event_file_writer::flush() {
  if (std::fflush(file_) != 0)
    throw std::runtime_error("cannot write the TensorBoard event file " + path_ + ": " + std::strerror(errno));
  last_flush_ = std::chrono::steady_clock::now();
}

void event_file_writer::flush_if_due() {
  if (std::chrono::steady_clock::now() - last_flush_ >= flush_interval) flush();
}

// TFRecord: uint64 length, uint32 masked CRC of the length, the data, uint32 masked CRC of the data.
void event_file_writer::write_record(std::string_view data) {
  const auto length = little_endian_bytes(static_cast<uint64_t>(data.size()));
  std::string record;
  record.reserve(length.size() + 4 + data.size() + 4);
  record.append(length).append(little_endian_bytes(masked_crc32c(length))).append(data).append(
      little_endian_bytes(masked_crc32c(data)));
  if (std::fwrite(record.data(), 1, record.size(), file_) != record.size())
    throw std::runtime_error("cannot write the TensorBoard event file " + path_ + ": " + std::strerror(errno));
}

}  // namespace det::tensorboard
