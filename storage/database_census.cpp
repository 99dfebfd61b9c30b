// What the Prometheus route reads from the database: experiments and trials by state, the labels
// of experiments that have not ended, and which experiment each unfinished trial belongs to.

#include "storage/database_impl.hpp"
#include "storage/sql_values.hpp"

namespace det::storage {

pb::StoredCensus database::stored_census() {
  return describing_failure("count experiments and trials", [&] {
    pqxx::read_transaction tx{impl_->connection};
    pb::StoredCensus out;
    for (const auto& row : tx.exec("SELECT state, count(*) FROM experiments GROUP BY state"))
      (*out.mutable_experiments_by_state())[row[0].as<std::string>()] = row[1].as<int64_t>();
    for (const auto& row : tx.exec("SELECT state, count(*) FROM trials GROUP BY state"))
      (*out.mutable_trials_by_state())[row[0].as<std::string>()] = row[1].as<int64_t>();
    const std::string unfinished = "state NOT IN ('" + state_name(pb::STATE_CANCELED) + "', '" +
                                   state_name(pb::STATE_COMPLETED) + "', '" + state_name(pb::STATE_ERROR) + "')";
    for (const auto& row :
         tx.exec("SELECT id, unnest(labels) FROM experiments WHERE " + unfinished + " ORDER BY id")) {
      auto* l = out.add_active_experiment_labels();
      l->set_experiment_id(row[0].as<int64_t>());
      l->set_label(row[1].as<std::string>());
    }
    for (const auto& row : tx.exec("SELECT id, experiment_id FROM trials WHERE " + unfinished + " ORDER BY id")) {
      auto* t = out.add_active_trials();
      t->set_trial_id(row[0].as<int64_t>());
      t->set_experiment_id(row[1].as<int64_t>());
    }
    return out;
  });
}

}  // namespace det::storage
