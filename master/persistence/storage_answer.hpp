#pragma once
// How the persistence actors (writer, readers, checkpoint collector) turn a call into
// storage::database, which throws a sentence on failure, into an answer: the value, or
// errc::storage_failed saying what failed and why.

#include <exception>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

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

/// What a storage step that may refuse (a `T`, or an error saying why not) gives, or
/// storage_failed: "cannot <what>: <the database's sentence>".
template <class T>
using or_refusal = std::variant<T, caf::error>;
template <class T, class F>
caf::result<T> answer_or_refusal(const std::string& what, F&& f) {
  auto out = attempt_storage("cannot " + what, std::forward<F>(f));
  if (!out)
    return std::move(out.error());
  if (auto* e = std::get_if<caf::error>(&*out))
    return std::move(*e);
  return std::move(std::get<T>(*out));
}

} // namespace det
