#include "messages/decoding_guard.hpp"

// Why this exists: CAF 0.17 decodes a few of its types (config_value, the stream messages
// upstream_msg and downstream_msg, the URI of a node id) with code that throws on a variant tag out
// of range (CAF_RAISE_ERROR in caf/variant.hpp) instead of returning an error. BASP decodes a remote
// message on a scheduler thread with nothing to catch it, so a single malformed message from any
// peer that reaches the actor port, before it has shown any token, called std::terminate
// (found by fuzz_caf_messages). CAF offers no way to refuse a type, and messages name their
// elements' types on the wire, so every node must be able to read any of them safely:
//  - values in a message's content are made by the type table's factories, which are replaced here
//    by ones whose values turn such an exception into a decoding error;
//  - node ids are decoded outside any table (BASP's handshake, a routed message's source and
//    destination, the forwarding stack), through node_id::uri_data::deserialize, which this file
//    defines again (see below).
#include <array>
#include <exception>
#include <string>

#include "caf/actor_system.hpp"
#include "caf/actor_system_config.hpp"
#include "caf/deserializer.hpp"
#include "caf/node_id.hpp"
#include "caf/sec.hpp"
#include "caf/thread_hook.hpp"
#include "caf/type_erased_value.hpp"
#include "caf/type_nr.hpp"
#include "caf/uniform_type_info_map.hpp"

namespace {

/// What `decode` returns, or an error where it throws.
template <class Decode>
caf::error without_throwing(Decode&& decode) {
  try {
    return decode();
  } catch (const std::exception&) {
    return caf::sec::invalid_argument;
  }
}

} // namespace

namespace det {
namespace {

using builtin_factories = std::array<caf::uniform_type_info_map::value_factory_kvp, caf::type_nrs - 1>;

// uniform_type_info_map keeps the built-in types' factories private. Access checks do not apply to
// the names in an explicit instantiation ([temp.explicit]), the one way to reach them from outside.
builtin_factories& builtins_of(caf::uniform_type_info_map& types);

template <builtin_factories caf::uniform_type_info_map::*Member>
struct builtin_factories_access {
  friend builtin_factories& builtins_of(caf::uniform_type_info_map& types) { return types.*Member; }
};

template struct builtin_factories_access<&caf::uniform_type_info_map::builtin_>;

/// A factory's value, except that decoding one cannot throw.
class guarded_value final : public caf::type_erased_value {
public:
  explicit guarded_value(caf::type_erased_value_ptr inner) : inner_(std::move(inner)) {}

  caf::error load(caf::deserializer& source) override {
    return without_throwing([&] { return inner_->load(source); });
  }
  void* get_mutable() override { return inner_->get_mutable(); }
  caf::rtti_pair type() const override { return inner_->type(); }
  const void* get() const override { return inner_->get(); }
  caf::error save(caf::serializer& sink) const override { return inner_->save(sink); }
  std::string stringify() const override { return inner_->stringify(); }
  caf::type_erased_value_ptr copy() const override { return caf::type_erased_value_ptr{new guarded_value(inner_->copy())}; }

private:
  caf::type_erased_value_ptr inner_;
};

/// Makes `factory` make guarded values.
void guard(caf::uniform_type_info_map::value_factory& factory) {
  factory = [inner = std::move(factory)] { return caf::type_erased_value_ptr{new guarded_value(inner())}; };
}

/// Guards the built-in factories once the system has its type table and before it starts any thread.
class builtin_decoding_guard final : public caf::thread_hook {
public:
  void init(caf::actor_system& sys) override {
    // types() is const only to callers; the table is the system's, which is not.
    for (auto& [name, factory] : builtins_of(const_cast<caf::uniform_type_info_map&>(sys.types()))) guard(factory);
  }
  void thread_started() override {}
  void thread_terminates() override {}
};

} // namespace

void guard_decoding(caf::actor_system_config& cfg) {
  for (auto& [name, factory] : cfg.value_factories_by_name) guard(factory);
  cfg.add_thread_hook<builtin_decoding_guard>();
}

} // namespace det

// libcaf_core's own definition is this body without the try: ELF lets a program's definition of a
// shared library's function take the place of the library's, for the library's calls too (here the
// virtual call node_id makes to decode a node id of the URI kind). Every det node links this file
// through configure_node; messages_test checks that a bad URI in a node id is an error.
caf::error caf::node_id::uri_data::deserialize(caf::deserializer& source) {
  return without_throwing([&] { return source(value_); });
}
