#pragma once
// Lets CAF serialize any generated protobuf message: the wire form is the
// protobuf encoding, the printed form (logs, deep_to_string) its text format.
// It lives in det::pb so that argument-dependent lookup finds it.

#include <string>
#include <type_traits>

#include <google/protobuf/message.h>

#include "caf/detail/stringification_inspector.hpp"
#include "caf/error.hpp"
#include "caf/meta/load_callback.hpp"
#include "caf/meta/type_name.hpp"
#include "messages/errc.hpp"

namespace det::pb {

template <class Inspector, class T>
std::enable_if_t<std::is_base_of_v<google::protobuf::Message, T>, typename Inspector::result_type>
inspect(Inspector& f, T& x) {
  std::string buf;
  if constexpr (std::is_same_v<Inspector, caf::detail::stringification_inspector>) {
    buf = x.ShortDebugString();
    return f(caf::meta::type_name(T::descriptor()->full_name().c_str()), buf);
  } else {
    if constexpr (Inspector::reads_state)
      x.SerializeToString(&buf);
    return f(caf::meta::type_name("pb"), buf, caf::meta::load_callback([&]() -> caf::error {
               return x.ParseFromString(buf)
                          ? caf::error{}
                          : make_error(errc::malformed_message,
                                       "a " + T::descriptor()->full_name() + " arrived that does not decode");
             }));
  }
}

} // namespace det::pb
