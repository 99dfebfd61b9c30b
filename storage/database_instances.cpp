// Instances launched by pools' providers (master/scheduling/provisioner.cpp): stored before each launch,
// updated as their provider lists them, ended with a reason.

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

void database::insert_instance(const pb::ProvisionedInstance& instance, const std::string& provider) {
  describing_failure("store instance " + instance.id(), [&] {
    pqxx::work tx{impl_->connection};
    // A row that ended (a launch that failed, then showed up) is reopened rather than duplicated.
    tx.exec_params("INSERT INTO provisioned_instances (id, resource_pool, provider, state, launch_time) "
                   "VALUES ($1, $2, $3, $4, $5::timestamptz) ON CONFLICT (id) DO UPDATE SET state = EXCLUDED.state, "
                   "end_time = NULL, end_reason = ''",
                   instance.id(), instance.resource_pool(), provider, instance.state(),
                   sql_time_or_now(instance.launch_time()));
    tx.commit();
  });
}

void database::update_instance(const pb::ProvisionedInstance& instance) {
  describing_failure("update instance " + instance.id(), [&] {
    pqxx::work tx{impl_->connection};
    const bool ended = instance.has_end_time();
    expect_one_row(tx.exec_params("UPDATE provisioned_instances SET state = $2, end_reason = $3, "
                                  "end_time = CASE WHEN $4 THEN $5::timestamptz ELSE NULL END WHERE id = $1",
                                  instance.id(), instance.state(), instance.end_reason(), ended,
                                  sql_time_or_now(instance.end_time())),
                   "instance " + instance.id());
    tx.commit();
  });
}

std::vector<pb::ProvisionedInstance> database::live_instances(const std::string& pool) {
  return describing_failure("read the instances of pool " + pool, [&] {
    pqxx::read_transaction tx{impl_->connection};
    auto rows = tx.exec_params("SELECT id, state, " + micros_of("launch_time") +
                                   " FROM provisioned_instances WHERE resource_pool = $1 AND end_time IS NULL "
                                   "ORDER BY launch_time, id",
                               pool);
    std::vector<pb::ProvisionedInstance> out;
    for (const auto& row : rows) {
      pb::ProvisionedInstance instance;
      instance.set_id(row[0].as<std::string>());
      instance.set_resource_pool(pool);
      instance.set_state(row[1].as<std::string>());
      if (auto time = time_from(row[2])) *instance.mutable_launch_time() = *time;
      out.push_back(std::move(instance));
    }
    return out;
  });
}

}  // namespace det::storage
