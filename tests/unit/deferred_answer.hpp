#pragma once
// What a route's deferred response was finished with, for tests that drive routes without a
// server: taken over from the response as the server takes it (the route's continuation then
// holds it alone), and empty until the route answers.

#include <doctest/doctest.h>

#include <memory>
#include <optional>

#include "master/http/http_types.hpp"

namespace det::testing {

inline std::shared_ptr<std::optional<runtime::http_response>> answer_of(runtime::http_response& res) {
  auto got = std::make_shared<std::optional<runtime::http_response>>();
  REQUIRE(static_cast<bool>(res.deferred));
  res.deferred->when_finished([got](const runtime::http_response& r) { *got = r; });
  res.deferred.reset();
  return got;
}

}  // namespace det::testing
