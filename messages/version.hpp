#pragma once

namespace det {
/// Master, agents and workers must run the same build (CAF checks their interfaces).
inline constexpr const char* det_version = "0.1.0";
} // namespace det
