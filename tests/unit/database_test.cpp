#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <pqxx/pqxx>
#include <stdexcept>
#include <string>

#include "storage/database.hpp"

using det::storage::database;
using det::storage::summary_timing;
namespace pb = det::pb;

namespace {

// A database of its own on the ctest server (scripts/pg_test.sh, fixture `pg`), so that no test sees another's rows.
std::string fresh_database() {
  const char* dir = std::getenv("DET_TEST_PG_DIR");
  if (!dir || !*dir)
    throw std::runtime_error("DET_TEST_PG_DIR is not set; run the storage tests through ctest, whose fixture starts "
                             "PostgreSQL with scripts/pg_test.sh.");
  std::ifstream in{std::string{dir} + "/conninfo"};
  std::string conninfo;
  if (!std::getline(in, conninfo) || conninfo.empty())
    throw std::runtime_error(std::string{dir} + "/conninfo is missing; did scripts/pg_test.sh start fail?");
  static int databases = 0;
  const std::string name = "det_test_" + std::to_string(::getpid()) + "_" + std::to_string(++databases);
  pqxx::connection admin{conninfo};
  pqxx::nontransaction tx{admin};
  tx.exec("DROP DATABASE IF EXISTS " + name);
  // file_copy is the fast way to copy a small template when fsync is off, as on the test server.
  tx.exec("CREATE DATABASE " + name + " STRATEGY file_copy");
  return conninfo + " dbname=" + name;  // libpq lets the last dbname win
}

struct migrated_database {
  std::string conninfo{fresh_database()};
  database db{conninfo};
  migrated_database() { db.migrate(); }
};

pb::Experiment experiment_named(const std::string& name, pb::State state = pb::STATE_ACTIVE) {
  pb::Experiment experiment;
  experiment.set_name(name);
  experiment.set_description("a test experiment");
  experiment.set_state(state);
  experiment.set_config("name = \"" + name + "\"\n[searcher]\nname = \"single\"\n");
  experiment.set_searcher("single");
  experiment.set_metric("validation_loss");
  experiment.set_owner_id(det::storage::admin_user_id);
  return experiment;
}

pb::Trial trial_of(int64_t experiment_id, int64_t request_id, pb::State state = pb::STATE_QUEUED) {
  pb::Trial trial;
  trial.set_experiment_id(experiment_id);
  trial.set_request_id(request_id);
  trial.set_state(state);
  trial.set_hparams("{\"lr\": 0.01, \"layers\": 2}");
  trial.set_seed(1234 + request_id);
  trial.set_target_batches(500);
  return trial;
}

google::protobuf::RepeatedPtrField<pb::MetricReport> reports_of(std::initializer_list<pb::MetricReport> reports) {
  return {reports.begin(), reports.end()};
}

pb::MetricReport report(int64_t trial_id, const std::string& group, int64_t batches,
                        std::initializer_list<std::pair<const std::string, double>> metrics) {
  pb::MetricReport r;
  r.set_trial_id(trial_id);
  r.set_group(group);
  r.set_total_batches(batches);
  r.set_total_records(batches * 32);
  r.set_total_epochs(double(batches) / 10.0);
  for (const auto& [name, value] : metrics) (*r.mutable_metrics())[name] = value;
  r.mutable_time()->set_seconds(1'700'000'000 + batches);
  r.mutable_time()->set_nanos(123'456'000);
  return r;
}

}  // namespace

TEST_CASE("database: migrate applies each migration once") {
  const std::string conninfo = fresh_database();
  database db{conninfo};
  const auto first = db.migrate();
  REQUIRE_FALSE(first.empty());
  CHECK(first.front() == "0001_initial");
  CHECK(db.migrate().empty());
  database again{conninfo};
  CHECK(again.migrate().empty());
}

TEST_CASE("database: a server that cannot be reached is reported in a sentence") {
  CHECK_THROWS_WITH_AS(database{"host=/nonexistent-det-socket-dir port=5432 user=postgres dbname=det"},
                       doctest::Contains("Could not connect to PostgreSQL"), std::runtime_error);
}

TEST_CASE("database: an experiment, its model and its first trials are stored together or not at all") {
  migrated_database m;
  auto& db = m.db;
  std::vector<pb::Trial> first{trial_of(0, 1), trial_of(0, 2)};
  const int64_t id = db.insert_experiment(experiment_named("together"), "model archive", &first);
  CHECK(first[0].experiment_id() == id);
  CHECK(first[1].id() > first[0].id());
  const auto trials = db.trials_of(id);
  REQUIRE(trials.size() == 2);
  CHECK(trials[0].id() == first[0].id());
  CHECK(trials[1].request_id() == 2);
  // A second trial with the same request id fails the whole transaction: no experiment is left
  // without the trials its search began with.
  std::vector<pb::Trial> clashing{trial_of(0, 1), trial_of(0, 1)};
  CHECK_THROWS_AS(db.insert_experiment(experiment_named("half"), "model archive", &clashing), std::runtime_error);
  const auto experiments = db.list_experiments();
  REQUIRE(experiments.size() == 1);
  CHECK(experiments[0].name() == "together");
  CHECK(db.list_experiments(1, 10).empty());  // paged past the only one
}

TEST_CASE("database: experiments and trials round-trip") {
  migrated_database m;
  auto& db = m.db;
  const auto first = experiment_named("mnist");
  const int64_t id = db.insert_experiment(first);
  const int64_t other = db.insert_experiment(experiment_named("cifar", pb::STATE_PAUSED));
  CHECK(other > id);

  const auto got = db.get_experiment(id);
  REQUIRE(got);
  CHECK(got->id() == id);
  CHECK(got->name() == "mnist");
  CHECK(got->description() == first.description());
  CHECK(got->config() == first.config());
  CHECK(got->searcher() == "single");
  CHECK(got->metric() == "validation_loss");
  CHECK(got->state() == pb::STATE_ACTIVE);
  CHECK(got->start_time().seconds() > 1'700'000'000);
  CHECK_FALSE(got->has_end_time());
  CHECK_FALSE(db.get_experiment(other + 100));

  const int64_t t1 = db.insert_trial(trial_of(id, 1));
  const int64_t t2 = db.insert_trial(trial_of(id, 2));
  CHECK_THROWS_AS(db.insert_trial(trial_of(id, 2)), std::runtime_error);  // request ids are unique per experiment

  const auto experiments = db.list_experiments();
  REQUIRE(experiments.size() == 2);
  CHECK(experiments[0].id() == id);
  CHECK(experiments[0].num_trials() == 2);
  CHECK(experiments[1].name() == "cifar");
  CHECK(experiments[1].state() == pb::STATE_PAUSED);
  CHECK(experiments[1].num_trials() == 0);

  auto update = [&](int64_t trial, pb::State state, int32_t restarts, const std::string& reason,
                    bool stopped, pb::WorkerOutcome outcome = pb::WORKER_OUTCOME_UNSPECIFIED) {
    pb::Trial t;
    t.set_id(trial);
    t.set_state(state);
    t.set_restarts(restarts);
    t.set_exit_reason(reason);
    t.set_searcher_stopped(stopped);
    t.set_outcome(outcome);
    db.update_trial(t);
  };
  update(t1, pb::STATE_RUNNING, 2, "", false);
  update(t2, pb::STATE_ERROR, 0, "the worker exited with status 1", true, pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS);
  update(t2, pb::STATE_ERROR, 0, "", false);  // keeps the reason, searcher_stopped and the outcome
  const auto trials = db.trials_of(id);
  REQUIRE(trials.size() == 2);
  CHECK(trials[0].id() == t1);
  CHECK(trials[0].experiment_id() == id);
  CHECK(trials[0].request_id() == 1);
  CHECK(trials[0].state() == pb::STATE_RUNNING);
  CHECK(trials[0].hparams() == "{\"lr\": 0.01, \"layers\": 2}");
  CHECK(trials[0].seed() == 1235);
  CHECK(trials[0].restarts() == 2);
  CHECK(trials[0].target_batches() == 500);
  CHECK(trials[0].total_batches() == 0);
  CHECK(trials[0].latest_training().empty());
  CHECK_FALSE(trials[0].has_end_time());
  CHECK(trials[1].state() == pb::STATE_ERROR);
  CHECK(trials[1].exit_reason() == "the worker exited with status 1");
  CHECK(trials[1].searcher_stopped());
  CHECK_FALSE(trials[0].searcher_stopped());
  CHECK(trials[1].outcome() == pb::WORKER_OUTCOME_INVALID_HYPERPARAMETERS);  // a restore reads it, not the reason
  CHECK(trials[0].outcome() == pb::WORKER_OUTCOME_UNSPECIFIED);
  CHECK(trials[1].end_time().seconds() >= trials[1].start_time().seconds());
  CHECK(db.trials_of(other).empty());

  const auto trial = db.get_trial(t2);
  REQUIRE(trial);
  CHECK(trial->SerializeAsString() == trials[1].SerializeAsString());
  CHECK_FALSE(db.get_trial(t2 + 100));

  db.set_experiment_state(id, pb::STATE_COMPLETED, true);
  const auto ended = db.get_experiment(id);
  CHECK(ended->state() == pb::STATE_COMPLETED);
  CHECK(ended->has_end_time());
  CHECK_THROWS_WITH_AS(update(t2 + 100, pb::STATE_RUNNING, 0, "", false), doctest::Contains("does not exist"),
                       std::runtime_error);
}

TEST_CASE("database: write_metrics stores reports and the trials' latest metrics") {
  migrated_database m;
  auto& db = m.db;
  const int64_t experiment = db.insert_experiment(experiment_named("metrics"));
  const int64_t a = db.insert_trial(trial_of(experiment, 1));
  const int64_t b = db.insert_trial(trial_of(experiment, 2));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();

  db.write_metrics(reports_of({report(a, "training", 20, {{"loss", 0.5}, {"acc", 0.1}}),
                    report(a, "training", 10, {{"loss", 0.75}, {"tab\t\"name\"", 1e-300}}),
                    report(b, "training", 5, {{"loss", nan}}),
                    report(a, "validation", 20, {{"validation_loss", 0.625}, {"big", -inf}})}));
  db.write_metrics(reports_of({report(a, "training", 30,
                                      {{"loss", 0.1 + 0.2}, {"not utf-8 \xff", 2.0}, {std::string("nul\0", 4), 3.0}})}));

  const auto all = db.trial_metrics(a, "");
  REQUIRE(all.size() == 4);
  CHECK(all[0].total_batches() == 10);
  CHECK(all[0].metrics().at("tab\t\"name\"") == 1e-300);
  CHECK(all[1].total_batches() == 20);
  CHECK(all[3].total_batches() == 30);
  CHECK(all[3].metrics().at("loss") == 0.1 + 0.2);  // exact round trip
  CHECK(all[3].metrics().at("not utf-8 \xef\xbf\xbd") == 2.0);  // U+FFFD for the bad byte
  CHECK(all[3].metrics().at("nul\xef\xbf\xbd") == 3.0);         // and for a NUL, which jsonb refuses
  for (const auto& r : all) CHECK(r.trial_id() == a);
  CHECK(all[0].total_records() == 320);
  CHECK(all[0].total_epochs() == 1.0);
  CHECK(all[0].time().seconds() == 1'700'000'010);
  CHECK(all[0].time().nanos() == 123'456'000);

  const auto validation = db.trial_metrics(a, "validation");
  REQUIRE(validation.size() == 1);
  CHECK(validation[0].group() == "validation");
  CHECK(validation[0].metrics().at("validation_loss") == 0.625);
  CHECK(validation[0].metrics().at("big") == -inf);
  CHECK(db.trial_metrics(a, "training").size() == 3);

  const auto for_b = db.trial_metrics(b, "");
  REQUIRE(for_b.size() == 1);
  CHECK(std::isnan(for_b[0].metrics().at("loss")));

  const auto trial_a = db.get_trial(a);
  CHECK(trial_a->total_batches() == 30);
  CHECK(trial_a->latest_training().size() == 3);  // the latest report's, not merged with earlier ones
  CHECK(trial_a->latest_training().at("loss") == 0.1 + 0.2);
  CHECK(trial_a->latest_validation().at("validation_loss") == 0.625);  // kept by the training-only batch
  CHECK(db.get_trial(b)->total_batches() == 5);
  CHECK(db.get_trial(b)->latest_validation().empty());

  db.copy_raw_metrics({a, b}, 1000, 100);  // 500 each, a hundred at a time
  CHECK(db.trial_metrics(b, "training").size() == 501);
  CHECK(db.trial_metrics(a, "training").size() == 503);
}

TEST_CASE("database: appended metrics commit all together, or none when one append failed") {
  migrated_database m;
  auto& db = m.db;
  const int64_t experiment = db.insert_experiment(experiment_named("appended"));
  const int64_t a = db.insert_trial(trial_of(experiment, 1));
  // Enough appends that the transaction's rows take several COPY statements.
  for (int appends = 0; appends < 10; ++appends) {
    std::vector<pb::MetricReport> reports;
    for (int i = 1; i <= 100; ++i) reports.push_back(report(a, "training", appends * 100 + i, {{"loss", 1.0 / i}}));
    db.append_metrics({reports.begin(), reports.end()});
  }
  database reader{m.conninfo};  // db's own connection is inside the open transaction
  CHECK(reader.trial_metrics(a, "").empty());  // not yet committed
  CHECK(db.commit_metrics(summary_timing::now).reports_size() == 1000);
  CHECK(db.trial_metrics(a, "training").size() == 1000);
  CHECK(db.get_trial(a)->total_batches() == 1000);
  CHECK(db.commit_metrics(summary_timing::now).reports_size() == 0);  // nothing appended since

  db.append_metrics(reports_of({report(a, "training", 2000, {{"loss", 0.5}})}));
  auto bad = report(a, "training", 2001, {{"loss", 0.5}});
  bad.mutable_time()->set_seconds(int64_t{1} << 60);  // no year 1 to 9999 time
  db.append_metrics(reports_of({bad}));
  db.append_metrics(reports_of({report(a, "training", 2002, {{"loss", 0.5}})}));
  CHECK_THROWS_WITH_AS(db.commit_metrics(summary_timing::now), doctest::Contains("is not a time between the years 1 and 9999"),
                       std::runtime_error);
  CHECK(db.trial_metrics(a, "training").size() == 1000);
  CHECK(db.get_trial(a)->total_batches() == 1000);

  db.append_metrics(reports_of({report(a, "training", 2003, {{"loss", 0.25}})}));  // the connection goes on
  CHECK(db.commit_metrics(summary_timing::now).reports_size() == 1);
  CHECK(db.get_trial(a)->total_batches() == 2003);
}

TEST_CASE("database: trials' summaries trail their metrics until due or settled, and a restore brings them up to the rows") {
  migrated_database m;
  auto& db = m.db;
  db.set_summary_interval(std::chrono::hours(1));  // never due in this test: only settling writes them
  const int64_t a = db.insert_trial(trial_of(db.insert_experiment(experiment_named("trailing")), 1, pb::STATE_RUNNING));
  db.write_metrics(reports_of({report(a, "training", 10, {{"loss", 1.0}})}));  // settled at once
  db.append_metrics(reports_of({report(a, "training", 20, {{"loss", 0.5}}), report(a, "validation", 20, {{"vl", 0.4}})}));
  CHECK(db.commit_metrics(summary_timing::when_due).reports_size() == 2);
  CHECK(db.trial_metrics(a, "").size() == 3);  // the rows are committed
  auto trial = db.get_trial(a);
  CHECK(trial->total_batches() == 10);  // the summary is not yet
  CHECK(trial->latest_training().at("loss") == 1.0);
  CHECK(trial->latest_validation().empty());

  // The other metric writer's summary of a later step lands first; the kept one must not undo it.
  database other{m.conninfo};
  other.write_metrics(reports_of({report(a, "training", 30, {{"loss", 0.25}})}));
  CHECK(db.commit_metrics(summary_timing::now).reports_size() == 0);  // nothing appended: the summary alone
  trial = db.get_trial(a);
  CHECK(trial->total_batches() == 30);
  CHECK(trial->latest_training().at("loss") == 0.25);
  CHECK(trial->latest_validation().at("vl") == 0.4);

  // A master that ends before a summary is due: the next start's restore catches up with the rows,
  // also of a trial behind only in total_batches, by a group other than training and validation.
  const int64_t b = db.insert_trial(trial_of(db.get_trial(a)->experiment_id(), 2, pb::STATE_RUNNING));
  db.write_metrics(reports_of({report(b, "training", 5, {{"loss", 1.0}})}));
  db.append_metrics(reports_of({report(a, "training", 40, {{"loss", 0.125}}), report(a, "validation", 40, {{"vl", 0.2}}),
                                report(b, "inference", 12, {{"latency", 0.01}})}));
  db.commit_metrics(summary_timing::when_due);
  CHECK(db.get_trial(a)->total_batches() == 30);
  CHECK(db.get_trial(b)->total_batches() == 5);
  const auto restorable = other.restorable_experiments();
  REQUIRE(restorable.size() == 1);
  REQUIRE(restorable[0].trials.size() == 2);
  CHECK(restorable[0].trials[1].total_batches() == 12);
  CHECK(restorable[0].trials[1].stored_training_step() == 5);
  CHECK(restorable[0].trials[0].stored_training_step() == 40);
  CHECK(restorable[0].trials[0].stored_validation_step() == 40);
  CHECK(restorable[0].trials[0].total_batches() == 40);
  trial = other.get_trial(a);
  CHECK(trial->total_batches() == 40);
  CHECK(trial->latest_training().at("loss") == 0.125);
  CHECK(trial->latest_validation().at("vl") == 0.2);
}

TEST_CASE("database: metrics are stored again once the connection's session was ended and begun anew") {
  migrated_database m;
  auto& db = m.db;
  const int64_t a = db.insert_trial(trial_of(db.insert_experiment(experiment_named("ended session")), 1));
  db.write_metrics(reports_of({report(a, "training", 1, {{"loss", 1.0}})}));  // its statement is prepared
  {
    pqxx::connection admin{m.conninfo};
    pqxx::nontransaction tx{admin};
    tx.exec("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND "
            "pid <> pg_backend_pid()");
  }
  CHECK_THROWS_AS(db.write_metrics(reports_of({report(a, "training", 2, {{"loss", 0.5}})})), std::runtime_error);
  db.write_metrics(reports_of({report(a, "training", 3, {{"loss", 0.25}})}));  // a new session, prepared again
  CHECK(db.trial_metrics(a, "training").size() == 2);
  CHECK(db.get_trial(a)->total_batches() == 3);
}

TEST_CASE("database: write_logs and trial_logs page by id") {
  migrated_database m;
  auto& db = m.db;
  const int64_t experiment = db.insert_experiment(experiment_named("logs"));
  const int64_t a = db.insert_trial(trial_of(experiment, 1));
  const int64_t b = db.insert_trial(trial_of(experiment, 2));
  std::vector<pb::LogEntry> entries;
  for (int i = 0; i < 25; ++i) {
    for (const int64_t trial : {a, b}) {
      pb::LogEntry entry;
      entry.set_trial_id(trial);
      entry.set_allocation_id("alloc-" + std::to_string(trial));
      entry.set_agent_id("agent-1");
      entry.set_stream(i % 2 ? "stderr" : "stdout");
      entry.set_text("line " + std::to_string(i) + "\twith a tab, a backslash \\ and\nanother line");
      if (i != 3) entry.mutable_time()->set_seconds(1'700'000'000 + i);
      entries.push_back(entry);
    }
  }
  db.write_logs(entries);

  const auto page1 = db.trial_logs(a, 0, 10);
  REQUIRE(page1.size() == 10);
  CHECK(page1[0].text() == "line 0\twith a tab, a backslash \\ and\nanother line");
  CHECK(page1[0].trial_id() == a);
  CHECK(page1[0].allocation_id() == "alloc-" + std::to_string(a));
  CHECK(page1[0].agent_id() == "agent-1");
  CHECK(page1[1].stream() == "stderr");
  CHECK(page1[1].time().seconds() == 1'700'000'001);
  CHECK(page1[3].time().seconds() > 1'700'000'100);  // unset means now
  for (std::size_t i = 1; i < page1.size(); ++i) CHECK(page1[i].id() > page1[i - 1].id());
  const auto page2 = db.trial_logs(a, page1.back().id(), 10);
  REQUIRE(page2.size() == 10);
  CHECK(page2[0].text().rfind("line 10\t", 0) == 0);
  const auto page3 = db.trial_logs(a, page2.back().id(), 10);
  REQUIRE(page3.size() == 5);
  CHECK(page3.back().text().rfind("line 24\t", 0) == 0);
  CHECK(db.trial_logs(a, page3.back().id(), 10).empty());
  CHECK(db.trial_logs(b, 0, 100).size() == 25);
}

TEST_CASE("database: every unfinished experiment is restorable, with its snapshot if it has one") {
  migrated_database m;
  auto& db = m.db;
  const int64_t snapshotted = db.insert_experiment(experiment_named("snapshotted"));
  const int64_t fresh = db.insert_experiment(experiment_named("fresh"));
  db.insert_experiment(experiment_named("done", pb::STATE_COMPLETED));
  const int64_t running = db.insert_trial(trial_of(fresh, 1, pb::STATE_RUNNING));
  const int64_t quiet = db.insert_trial(trial_of(fresh, 2, pb::STATE_QUEUED));
  db.save_snapshot(snapshotted, "bytes");
  db.write_metrics(reports_of({report(running, "training", 20, {{"loss", 0.5}}), report(running, "training", 10, {{"loss", 0.7}}),
                    report(running, "validation", 10, {{"validation_loss", 0.6}})}));
  db.write_metrics(reports_of({report(running, "training", 15, {{"loss", 0.6}})}));  // a resumed run's repeat

  const auto restorable = db.restorable_experiments();
  REQUIRE(restorable.size() == 2);
  CHECK(restorable[0].experiment.id() == snapshotted);
  CHECK(restorable[0].snapshot == "bytes");
  CHECK(restorable[1].experiment.id() == fresh);
  CHECK(restorable[1].snapshot.empty());
  REQUIRE(restorable[1].trials.size() == 2);
  CHECK(restorable[1].trials[0].state() == pb::STATE_RUNNING);
  // The highest step stored per group, which a restored trial dedupes by; -1 for none.
  CHECK(restorable[1].trials[0].id() == running);
  CHECK(restorable[1].trials[0].stored_training_step() == 20);
  CHECK(restorable[1].trials[0].stored_validation_step() == 10);
  CHECK(restorable[1].trials[1].id() == quiet);
  CHECK(restorable[1].trials[1].stored_training_step() == -1);
  CHECK(restorable[1].trials[1].stored_validation_step() == -1);
}

TEST_CASE("database: a checkpoint recorded again is the same row; its uuid cannot name another") {
  migrated_database m;
  auto& db = m.db;
  const int64_t experiment = db.insert_experiment(experiment_named("resent"));
  const int64_t trial = db.insert_trial(trial_of(experiment, 1));
  pb::Checkpoint c;
  c.set_uuid("6f1c2a34-0000-4000-8000-000000000001");
  c.set_trial_id(trial);
  c.set_steps_completed(50);
  c.set_storage_path("/checkpoints");
  db.insert_checkpoint(c);
  db.insert_checkpoint(c);  // its worker resent it after a master restart
  CHECK(db.trial_checkpoints(trial).size() == 1);
  c.set_steps_completed(100);
  CHECK_THROWS_WITH_AS(db.insert_checkpoint(c), doctest::Contains("names another checkpoint"), std::runtime_error);
  CHECK(db.trial_checkpoints(trial).at(0).steps_completed() == 50);
}

TEST_CASE("database: agents are inserted, replaced and marked disconnected") {
  migrated_database m;
  auto& db = m.db;
  pb::Agent agent;
  agent.set_id("agent-1");
  agent.set_hostname("node-a");
  agent.set_resource_pool("default");
  agent.set_version("0.1.0");
  agent.set_connected(true);
  for (int i = 0; i < 2; ++i) {
    auto* slot = agent.add_slots();
    slot->set_id(i);
    slot->set_type(pb::SLOT_TYPE_CUDA);
    slot->set_device("NVIDIA H100 80GB HBM3");
    slot->set_memory_bytes(int64_t{80} << 30);
    slot->set_uuid("GPU-" + std::to_string(i));
    slot->set_enabled(true);
  }
  db.upsert_agent(agent);

  auto agents = db.list_agents();
  REQUIRE(agents.size() == 1);
  CHECK(agents[0].hostname() == "node-a");
  CHECK(agents[0].resource_pool() == "default");
  CHECK(agents[0].version() == "0.1.0");
  CHECK(agents[0].connected());
  CHECK(agents[0].registered_time().seconds() > 1'700'000'000);
  REQUIRE(agents[0].slots_size() == 2);
  CHECK(agents[0].slots(1).SerializeAsString() == agent.slots(1).SerializeAsString());

  agent.set_hostname("node-b");
  agent.mutable_slots(0)->set_allocation_id("alloc-7");
  agent.mutable_registered_time()->set_seconds(1'700'000'123);
  db.upsert_agent(agent);
  pb::Agent cpu_only;
  cpu_only.set_id("agent-0");
  cpu_only.set_hostname("node-c");
  cpu_only.set_resource_pool("cpu");
  cpu_only.set_connected(true);
  db.upsert_agent(cpu_only);
  db.set_agent_connected("agent-1", false);

  agents = db.list_agents();
  REQUIRE(agents.size() == 2);
  CHECK(agents[0].id() == "agent-0");
  CHECK(agents[0].slots().empty());
  CHECK(agents[1].hostname() == "node-b");
  CHECK(agents[1].slots(0).allocation_id() == "alloc-7");
  CHECK(agents[1].registered_time().seconds() == 1'700'000'123);
  CHECK_FALSE(agents[1].connected());
  CHECK_THROWS_AS(db.set_agent_connected("agent-9", true), std::runtime_error);
}

TEST_CASE("database: deleting an experiment whose checkpoint a model version points at deletes nothing") {
  // The master checks for model versions first, and deletes the checkpoint files only after the
  // rows: a version registered between the check and the delete must make the delete fail whole.
  migrated_database m;
  auto& db = m.db;
  const int64_t experiment = db.insert_experiment(experiment_named("registered", pb::STATE_COMPLETED));
  const int64_t trial = db.insert_trial(trial_of(experiment, 1, pb::STATE_COMPLETED));
  pb::Checkpoint c;
  c.set_uuid("6f1c2a34-0000-4000-8000-000000000002");
  c.set_trial_id(trial);
  c.set_steps_completed(50);
  c.set_storage_path("/checkpoints");
  c.set_state(pb::CHECKPOINT_STATE_COMPLETED);
  db.insert_checkpoint(c);
  auto model = db.insert_model("kept", "", {}, det::storage::admin_user_id);
  REQUIRE(model);
  db.insert_model_version(model->id(), c.uuid(), "", "{}", det::storage::admin_user_id);
  CHECK_THROWS_AS(db.delete_experiment_rows(experiment), std::runtime_error);
  CHECK(db.get_experiment(experiment));
  CHECK(db.trial_checkpoints(trial).size() == 1);
  CHECK(db.versions_of_checkpoints_of(experiment).size() == 1);
}

TEST_CASE("database: a task is stored, moves through its states, keeps its log, and is restorable until it ends") {
  migrated_database m;
  auto& db = m.db;
  pb::Task task;
  task.set_id("0f8e6a8e-0000-4000-8000-000000000001");
  task.set_kind(pb::TASK_KIND_COMMAND);
  task.set_owner_id(det::storage::admin_user_id);
  task.set_description("Command: echo \"hi\"");
  task.set_config("entrypoint = [\"echo\", \"hi\"]\n");
  task.set_slots(2);
  task.set_resource_pool("default");
  task.set_state(pb::TASK_STATE_QUEUED);
  task.add_entrypoint("echo");
  task.add_entrypoint("a \"quoted\" word");
  const std::string context("tar\0bytes", 9);
  db.insert_task(task, {"token-1", "", ""}, context);

  auto stored = db.get_task(task.id());
  REQUIRE(stored);
  CHECK(stored->owner() == "admin");
  CHECK(stored->state() == pb::TASK_STATE_QUEUED);
  CHECK(stored->entrypoint_size() == 2);
  CHECK(stored->entrypoint(1) == "a \"quoted\" word");
  CHECK(stored->start_time().seconds() > 0);
  CHECK_FALSE(stored->has_end_time());
  CHECK_FALSE(stored->has_exit_code());
  auto restorable = db.restorable_tasks();
  REQUIRE(restorable.size() == 1);
  CHECK(restorable[0].secrets.allocation_token == "token-1");
  CHECK(restorable[0].context == context);
  CHECK(stored->proxy_path() == "/proxy/" + task.id() + "/");

  pb::LogEntry line;
  line.set_task_id(task.id());
  line.set_stream("stdout");
  line.set_text("hi");
  db.write_logs({line});
  auto logs = db.task_logs(task.id(), 0, 10);
  REQUIRE(logs.size() == 1);
  CHECK(logs[0].text() == "hi");
  CHECK(logs[0].task_id() == task.id());

  task.set_state(pb::TASK_STATE_TERMINATED);
  task.set_agent_id("agent-1");
  task.set_exit_code(3);
  task.set_exit_reason("exited with code 3");
  task.set_ready(true);
  task.set_service_address("127.0.0.1:2900");
  db.update_task(task);
  stored = db.get_task(task.id());
  REQUIRE(stored);
  CHECK(stored->state() == pb::TASK_STATE_TERMINATED);
  CHECK(stored->exit_code() == 3);
  CHECK(stored->agent_id() == "agent-1");
  CHECK(stored->has_end_time());
  CHECK(stored->ready());
  CHECK(stored->service_address() == "127.0.0.1:2900");
  CHECK(db.restorable_tasks().empty());
  CHECK(db.list_tasks(pb::TASK_KIND_COMMAND).size() == 1);
  CHECK(db.list_tasks(pb::TASK_KIND_NOTEBOOK).empty());
  CHECK(db.list_tasks(pb::TASK_KIND_UNSPECIFIED).size() == 1);

  const int64_t experiment = db.insert_experiment(experiment_named("with a running trial"));
  db.insert_trial(trial_of(experiment, 1, pb::STATE_RUNNING));
  db.insert_trial(trial_of(experiment, 2, pb::STATE_COMPLETED));
  const auto summaries = db.task_summaries();
  REQUIRE(summaries.size() == 2);
  CHECK(summaries[0].type() == "COMMAND");
  CHECK(summaries[0].state() == "TERMINATED");
  CHECK(summaries[1].type() == "TRIAL");
  CHECK(summaries[1].state() == "RUNNING");
}
