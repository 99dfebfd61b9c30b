#pragma once

#include <vector>

namespace det::storage {

/// One forward-only schema step from storage/migrations; name is the file name without ".sql".
struct migration {
  const char* name;
  const char* sql;
};

/// All migrations in apply order, compiled into the library (see embed_migrations.cmake).
const std::vector<migration>& migrations();

}  // namespace det::storage
