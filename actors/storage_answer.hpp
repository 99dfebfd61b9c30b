#pragma once
// How the persistence actors (writer, readers, checkpoint collector) turn a call into
// storage::database, which throws a sentence on failure, into an answer: the value, or
// errc::storage_failed saying what failed and why.

#include <exception>
#include <string>
#include <type_traits>
#include <utility>

#include "caf/expected.hpp"
#include "caf/result.hpp"
#include "messages/errc.hpp"

namespace det {

/// What `f()` returns, or storage_failed: "<what>: <the database's sentence>".
template <class F>
caf::expected<std::invoke_result_t<F&>> attempt_storage(const std::string& what, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    return make_error(errc::storage_failed, what + ": " + e.what());
  }
}

/// The answer a handler returns for an attempt: its value or its error.
template <class T>
caf::result<T> answer_with(caf::expected<T> x) {
  if (x)
    return std::move(*x);
  return std::move(x.error());
}

} // namespace det
