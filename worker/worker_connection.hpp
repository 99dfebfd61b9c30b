#pragma once
// The worker's line to its trial on the master: the process's actor system, the hello that hands
// out the trial, and requests that outlive a master restart. Plain C++ here; CAF stays in the .cpp.

#include <cstdint>
#include <memory>
#include <string>

namespace det::pb {
class Checkpoint;
class MetricBatch;
class Rendezvous;
class TrialSpec;
class WorkerExit;
class WorkerHello;
}  // namespace det::pb

namespace det::runtime {

/// The worker's line to its trial on the master. If the master goes away (a restart), calls
/// wait while it reconnects and says hello again, for up to the trial's reconnect_wait_s: a
/// restarted master takes the run back and the report that failed is sent again. An explicit
/// refusal (a run that is over, metrics the master could not store) is not retried.
class worker_connection {
 public:
  /// Starts this process's actor system, with one scheduler thread: training runs on the
  /// caller's thread, and the actors here only carry messages. Connects nothing yet.
  worker_connection(std::string host, uint16_t port);
  ~worker_connection();
  worker_connection(const worker_connection&) = delete;
  worker_connection& operator=(const worker_connection&) = delete;

  /// Connects to the master ahead of the hello, as a warm worker does while it waits for its run:
  /// the hello then needs no connection and handshake of its own. Nothing is said yet, so nothing
  /// is proven: the master's gate takes no message without its token. A connection that cannot be
  /// made, or that is lost meanwhile, is made again by connect().
  void reach_master();

  /// Connects (unless reach_master() did) and says `hello`; false (with `failure` set, and
  /// `refused` if the master answered no) if that does not work.
  bool connect(const pb::WorkerHello& hello, pb::TrialSpec& spec, std::string& failure, bool& refused);

  void set_reconnect_wait(int64_t seconds);

  /// After a lost master: reconnects within the wait, or throws.
  void reconnect(const std::string& while_doing);

  // -- requests to the trial, across reconnections ----------------------------------------------
  // Each throws std::runtime_error naming `what` if the master refuses it.

  /// Whether the master recorded the checkpoint (committed it).
  bool call(const pb::Checkpoint& checkpoint, const std::string& what);
  /// Whether the exit report arrived.
  bool call(const pb::WorkerExit& exit, const std::string& what);
  /// The trial's answer to a rendezvous set or get.
  pb::Rendezvous call(const pb::Rendezvous& request, const std::string& what);

  // -- metric reports, which do not stop training -----------------------------------------------

  /// Sends `batch` (of metric group `group`) without waiting for its acknowledgement. At most
  /// one batch is in flight: await_metrics() first.
  void send_metrics(pb::MetricBatch batch, std::string group);

  /// Waits for the batch still in flight, if any (sending it again after a reconnection);
  /// throws if the master refused it.
  void await_metrics();

  /// Whether await_metrics() would return at once: nothing is in flight, or its answer (or
  /// news of the connection) has arrived.
  bool metrics_answered();

 private:
  /// The actor system, this thread's actor, the trial's handle and the batch in flight.
  struct state;

  /// Whether the connection to the master is known to be gone (its heartbeats stopped or it
  /// closed): checked before a call, since a request into a dead connection only times out.
  bool connection_lost();

  /// Asks the trial `msg` and hands the reply to `on_reply`, across reconnections.
  template <class Msg, class OnReply>
  void ask(const Msg& msg, const std::string& what, OnReply on_reply);

  std::unique_ptr<state> state_;
};

} // namespace det::runtime
