#include <algorithm>

#include "storage/database_impl.hpp"
#include "storage/migrations.hpp"

namespace det::storage {

namespace {

// Serializes concurrent migrate() calls (two masters on one database); the value is arbitrary but fixed.
constexpr int64_t migration_lock = 0x6465745f6d6967;  // "det_mig"

}  // namespace

database::database(const std::string& conninfo) {
  try {
    impl_ = std::make_unique<impl>(conninfo);
  } catch (const std::exception& e) {
    throw std::runtime_error("Could not connect to PostgreSQL with \"" + conninfo + "\": " + without_newline(e.what()));
  }
}

database::~database() = default;

std::vector<std::string> database::migrate() {
  return describing_failure("apply the schema migrations", [&] {
    auto& connection = impl_->connection;
    {
      pqxx::work tx{connection};
      tx.exec_params("SELECT pg_advisory_xact_lock($1)", migration_lock);
      tx.exec(
          "CREATE TABLE IF NOT EXISTS schema_migrations ("
          "version text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())");
      tx.commit();
    }
    std::vector<migration> pending = migrations();
    std::sort(pending.begin(), pending.end(),
              [](const migration& a, const migration& b) { return std::string{a.name} < b.name; });
    std::vector<std::string> applied;
    for (const auto& step : pending) {
      pqxx::work tx{connection};
      tx.exec_params("SELECT pg_advisory_xact_lock($1)", migration_lock);
      if (!tx.exec_params("SELECT 1 FROM schema_migrations WHERE version = $1", step.name).empty()) continue;
      try {
        tx.exec(step.sql);
      } catch (const std::exception& e) {
        throw std::runtime_error(std::string{"migration "} + step.name + " failed: " + without_newline(e.what()));
      }
      tx.exec_params("INSERT INTO schema_migrations (version) VALUES ($1)", step.name);
      tx.commit();
      applied.push_back(step.name);
    }
    return applied;
  });
}

}  // namespace det::storage
