#pragma once
// Keeps a malformed message from a peer from ending the process that decodes it.

namespace caf {
class actor_system_config;
}

namespace det {

/// Makes every node's actor system turn an exception thrown while decoding a value of CAF's
/// built-in types or of the types registered in `cfg` so far into a decoding error, after which CAF
/// drops the message as it drops any it cannot read. configure_node calls it after
/// register_message_types.
void guard_decoding(caf::actor_system_config& cfg);

} // namespace det
