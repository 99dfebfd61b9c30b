#pragma once
// Which peers may talk to the master's actors over the network. An agent is admitted once it
// presents the cluster's agent token, a worker once it proves its run with the run's allocation
// token; the admin REPL is not admitted at all (each of its questions carries an admin's token).
//
// Every actor whose handle ever crosses the network (the front door, agent proxies, trials) is
// spawned on `guarded<...>`: a message from a node that was not admitted, or one with no
// sender, is dropped before it reaches the mailbox. CAF lets any peer address any actor whose
// handle was ever sent to some node, so checking hellos alone would not be enough.

#include <string>

#include "caf/mailbox_element.hpp"
#include "caf/node_id.hpp"
#include "caf/type_erased_tuple.hpp"

namespace det {

/// Records `node` as admitted (for the life of the master process: node ids are not reused).
void admit_node(const caf::node_id& node);
bool node_admitted(const caf::node_id& node);
/// Logs, once a second at most, that a message from `node` was dropped.
void note_dropped(const caf::node_id& node, const char* actor_name);

/// Lets no message from an unadmitted node through.
struct admit_no_stranger {
  static bool allowed(const caf::type_erased_tuple&) { return false; }
};

/// `Base` (a typed_event_based_actor) whose mailbox takes messages only from its own node and
/// from admitted ones, plus those `Strangers::allowed` lets through from anyone (the hellos).
template <class Base, class Strangers = admit_no_stranger>
class guarded : public Base {
public:
  using Base::Base;

  void enqueue(caf::mailbox_element_ptr what, caf::execution_unit* host) override {
    const auto& sender = what->sender;
    if (sender != nullptr &&
        (sender->node() == this->home_system().node() || node_admitted(sender->node()) ||
         Strangers::allowed(what->content()))) {
      Base::enqueue(std::move(what), host);
      return;
    }
    note_dropped(sender ? sender->node() : caf::node_id{}, this->name());
  }
};

} // namespace det
