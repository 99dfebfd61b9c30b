#pragma once

#include <string>

namespace det::storage {

/// A private PostgreSQL 15 server run from the system binaries (/usr/lib/postgresql/15/bin, or $PGBIN), so the master
/// needs no database setup. Layout under the data directory DIR (0700): postgres/ (the cluster, created on first
/// start), run/ (0700, the unix socket; no TCP listener), postgres-password (0600, the superuser's password, which
/// the server asks for: scram-sha-256, nothing trusted), postgres.log (server log), initdb.log.
/// As root the server runs as the `postgres` system user, which initdb requires.
class embedded_postgres {
 public:
  explicit embedded_postgres(std::string data_dir);
  ~embedded_postgres();
  embedded_postgres(const embedded_postgres&) = delete;
  embedded_postgres& operator=(const embedded_postgres&) = delete;

  /// Creates the cluster and the database `det` if needed, then starts the server and waits for it.
  /// A server left running or a stale postmaster.pid from a master that was killed does not block it.
  /// A cluster an older det made with trust authentication gets a password and a pg_hba.conf that asks for it.
  /// Throws std::runtime_error with a sentence and the tail of the relevant log.
  void start();
  /// Fast shutdown; does nothing when not started.
  void stop();
  /// libpq connection string for the database `det`; it names the password file (passfile=), not the password.
  std::string conninfo() const;

 private:
  std::string dir_;
  bool running_ = false;
};

}  // namespace det::storage
