#pragma once
// Debian's protobuf 3.21 fills TimeUtil::GetCurrentTime() to the second only;
// metric and log times need sub-second precision.

#include <chrono>

#include <google/protobuf/timestamp.pb.h>

namespace det {

inline google::protobuf::Timestamp timestamp_of(std::chrono::system_clock::time_point time) {
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(time.time_since_epoch()).count();
  google::protobuf::Timestamp t;
  t.set_seconds(micros / 1000000);
  t.set_nanos(static_cast<int32_t>(micros % 1000000) * 1000);
  return t;
}

inline std::chrono::system_clock::time_point time_point_of(const google::protobuf::Timestamp& t) {
  return std::chrono::system_clock::time_point{std::chrono::duration_cast<std::chrono::system_clock::duration>(
      std::chrono::seconds(t.seconds()) + std::chrono::nanoseconds(t.nanos()))};
}

inline google::protobuf::Timestamp now() { return timestamp_of(std::chrono::system_clock::now()); }

} // namespace det
