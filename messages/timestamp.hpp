#pragma once
// Debian's protobuf 3.21 fills TimeUtil::GetCurrentTime() to the second only;
// metric and log times need sub-second precision.

#include <chrono>

#include <google/protobuf/timestamp.pb.h>

namespace det {

inline google::protobuf::Timestamp now() {
  auto since_epoch = std::chrono::system_clock::now().time_since_epoch();
  auto micros = std::chrono::duration_cast<std::chrono::microseconds>(since_epoch).count();
  google::protobuf::Timestamp t;
  t.set_seconds(micros / 1000000);
  t.set_nanos(static_cast<int32_t>(micros % 1000000) * 1000);
  return t;
}

} // namespace det
