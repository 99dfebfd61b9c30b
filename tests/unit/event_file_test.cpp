// TensorBoard event files: the CRC against TensorBoard's own test vectors, a scalar event's bytes
// against the layout TensorBoard decodes, and a written file's TFRecord framing read back.
// tests/integration/tensorboard_test.py decodes a cluster's files with TensorBoard's protos.

#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include "tensorboard/event_file_writer.hpp"
#include "tensorboard/event_records.hpp"
#include "tensorboard/masked_crc32c.hpp"

using namespace det::tensorboard;

namespace {

template <class T>
T read_at(const std::string& bytes, size_t offset) {
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  return value;
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace

TEST_CASE("crc32c matches RFC 3720 and TensorBoard's masked test vector") {
  CHECK(crc32c(std::string(32, '\0')) == 0x8a9136aau);
  CHECK(crc32c("123456789") == 0xe3069283u);
  CHECK(masked_crc32c("\x1a\x11" "CRC test, one two") == 0x5794d08au);
}

TEST_CASE("a scalar event holds a rank-0 DT_FLOAT tensor, with the scalars metadata only when asked") {
  const float value = 0.5f;
  std::string f32(reinterpret_cast<const char*>(&value), 4);
  const double wall = 1.0;
  std::string f64(reinterpret_cast<const char*>(&wall), 8);
  const std::string tensor = std::string("\x42\x0a\x08\x01\x12\x00\x2a\x04", 8) + f32;
  const std::string metadata = std::string("\x4a\x0d\x0a\x09\x0a\x07", 6) + "scalars" + std::string("\x20\x01", 2);

  auto first = scalars_event(wall, 7, {{"loss", value, tag_metadata::attach}});
  std::string value_bytes = std::string("\x0a\x04", 2) + "loss" + metadata + tensor;
  std::string summary = "\x0a" + std::string(1, static_cast<char>(value_bytes.size())) + value_bytes;
  CHECK(hex(first) == hex("\x09" + f64 + "\x10\x07" + "\x2a" + std::string(1, static_cast<char>(summary.size())) + summary));

  auto later = scalars_event(wall, 300, {{"loss", value, tag_metadata::omit}});
  std::string later_value = std::string("\x0a\x04", 2) + "loss" + tensor;
  std::string later_summary = "\x0a" + std::string(1, static_cast<char>(later_value.size())) + later_value;
  CHECK(hex(later) == hex("\x09" + f64 + std::string("\x10\xac\x02", 3) + "\x2a" +
                          std::string(1, static_cast<char>(later_summary.size())) + later_summary));
}

TEST_CASE("the first record of a file is its version, and every record's CRCs check out") {
  auto dir = std::filesystem::temp_directory_path() / ("det-event-file-test-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::string path;
  {
    event_file_writer writer(dir.string());
    path = writer.path();
    writer.write_session_start({{"lr", 0.01}, {"optimizer", std::string("adam")}, {"nesterov", true}}, 12.0);
    writer.write_scalars("training", 100, 13.0, {{"loss", 0.25}, {"samples_per_second", 1000.0}});
    writer.write_scalars("training", 200, 14.0, {{"loss", 0.125}});
    writer.flush();
  }
  CHECK(std::filesystem::path(path).filename().string().rfind("events.out.tfevents.", 0) == 0);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> records;
  for (size_t at = 0; at < bytes.size();) {
    REQUIRE(at + 12 <= bytes.size());
    const auto length = read_at<uint64_t>(bytes, at);
    CHECK(read_at<uint32_t>(bytes, at + 8) == masked_crc32c(bytes.substr(at, 8)));
    REQUIRE(at + 12 + length + 4 <= bytes.size());
    const auto data = bytes.substr(at + 12, length);
    CHECK(read_at<uint32_t>(bytes, at + 12 + length) == masked_crc32c(data));
    records.push_back(data);
    at += 12 + length + 4;
  }
  REQUIRE(records.size() == 4);
  CHECK(records[0].find("brain.Event:2") != std::string::npos);
  CHECK(records[1].find("_hparams_/session_start_info") != std::string::npos);
  CHECK(records[2].find("training/loss") != std::string::npos);
  CHECK(records[2].find("scalars") != std::string::npos);  // each tag's first event carries the metadata
  CHECK(records[3].find("training/loss") != std::string::npos);
  CHECK(records[3].find("scalars") == std::string::npos);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a directory that cannot be made is an error naming it") {
  CHECK_THROWS_WITH(event_file_writer("/proc/no-such-dir/tb"),
                    doctest::Contains("cannot create the TensorBoard directory /proc/no-such-dir/tb"));
}
