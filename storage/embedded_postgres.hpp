#pragma once

#include <string>

namespace det::storage {

/// A private PostgreSQL 15 server run from the system binaries (/usr/lib/postgresql/15/bin, or $PGBIN), so the master
/// needs no database setup. Layout under the data directory DIR: postgres/ (the cluster, created on first start),
/// run/ (the unix socket; no TCP listener), postgres.log (server log), initdb.log.
/// As root the server runs as the `postgres` system user, which initdb requires.
class embedded_postgres {
 public:
  explicit embedded_postgres(std::string data_dir);
  ~embedded_postgres();
  embedded_postgres(const embedded_postgres&) = delete;
  embedded_postgres& operator=(const embedded_postgres&) = delete;

  /// Creates the cluster and the database `det` if needed, then starts the server and waits for it.
  /// A server left running or a stale postmaster.pid from a master that was killed does not block it.
  /// Throws std::runtime_error with a sentence and the tail of the relevant log.
  void start();
  /// Fast shutdown; does nothing when not started.
  void stop();
  /// libpq connection string for the database `det`.
  std::string conninfo() const;

 private:
  std::string dir_;
  bool running_ = false;
};

}  // namespace det::storage
