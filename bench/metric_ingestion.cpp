// Metric ingestion: rows made durable per second through the persistence
// actor (MetricBatch messages, buffered, written with COPY, each acknowledged
// once committed) divided by a raw COPY of the same rows into the same server,
// both in this process. The actor gets up to --reporters batches in flight, as
// that many trials' workers each waiting for their last report's acknowledgement; the raw COPY
// writes the same rows: --batch of each trial in turn.
//
//   bench_metric_ingestion [--rows N] [--batch N] [--reporters 16] [--rounds 5] [--db URL | --data-dir DIR]
//
// Without --db it starts an embedded PostgreSQL in a fresh temporary directory.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "master/persistence/change_feed.hpp"
#include "messages/caf_types.hpp"
#include "messages/timestamp.hpp"

#include "master/spawn.hpp"
#include "observability/measurements.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "storage/embedded_postgres.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// One trial's worker: sends a batch of its reports, and the next once that one is acknowledged.
struct reporter_state {
  int64_t trial = 0;
  int64_t rows_left = 0;
  int64_t reported = 0;  // total_batches of its last report
};

void report_next(caf::stateful_actor<reporter_state>* self, const det::persistence_actor& persistence,
                 int64_t batch_size, const google::protobuf::Timestamp& now, std::shared_ptr<std::string> failure) {
  auto& st = self->state;
  if (st.rows_left == 0) {
    self->quit();
    return;
  }
  det::pb::MetricBatch batch;
  for (int64_t i = 0; i < batch_size && st.rows_left > 0; ++i, --st.rows_left) {
    const int64_t n = ++st.reported;
    auto* r = batch.add_reports();
    r->set_trial_id(st.trial);
    r->set_group("training");
    r->set_total_batches(n);
    r->set_total_records(n * 32);
    r->set_total_epochs(double(n) / 1000.0);
    (*r->mutable_metrics())["loss"] = 1.0 / double(n);
    *r->mutable_time() = now;
  }
  self->request(persistence, std::chrono::seconds(60), std::move(batch))
      .then([=](int64_t) { report_next(self, persistence, batch_size, now, failure); },
            [=](caf::error& e) {
              *failure = self->system().render(e);
              self->quit();
            });
}

// Rows per second through the persistence actor from one reporter per trial, each waiting for its
// last batch's acknowledgement (as a worker does), then a flush makes the tail durable. The rows
// are those that copy_raw_metrics writes.
double through_actor(caf::actor_system& sys, std::shared_ptr<det::storage::database> db, const std::string& db_url,
                     const std::vector<int64_t>& trials, int64_t rows, int64_t batch_size) {
  auto feed = std::make_shared<det::change_feed>();
  auto persistence = det::spawn_persistence(sys, db, db_url, feed, det::spawn_row_writer(sys, db_url, feed));
  const auto now = det::now();
  const auto commits_before = det::observability::measurements().commit_seconds.read();
  auto failure = std::make_shared<std::string>();
  const auto start = clock_type::now();
  std::vector<caf::actor> reporters;
  for (std::size_t i = 0; i < trials.size(); ++i) {
    // copy_raw_metrics's share for this trial: whole batches in turn, the last one perhaps short.
    const int64_t full_rounds = rows / (batch_size * int64_t(trials.size()));
    const int64_t rest = rows - full_rounds * batch_size * int64_t(trials.size());
    const int64_t share = full_rounds * batch_size + std::clamp(rest - int64_t(i) * batch_size, int64_t{0}, batch_size);
    reporters.push_back(sys.spawn([=](caf::stateful_actor<reporter_state>* self) {
      self->state.trial = trials[i];
      self->state.rows_left = share;
      report_next(self, persistence, batch_size, now, failure);
      return caf::behavior{[](caf::unit_t) {}};
    }));
  }
  caf::scoped_actor self{sys};
  self->wait_for(reporters);
  if (!failure->empty()) throw std::runtime_error(*failure);
  self->request(persistence, std::chrono::seconds(300), det::flush_atom::value)
      .receive([](int64_t) {}, [&](caf::error& e) { throw std::runtime_error(sys.render(e)); });
  auto elapsed = seconds_since(start);
  const auto commits = det::observability::measurements().commit_seconds.read();
  const auto count = commits.count - commits_before.count;
  std::printf("  %llu commits, %.0f rows and %.2f ms each on average\n", static_cast<unsigned long long>(count),
              double(rows) / double(count), 1000.0 * (commits.sum - commits_before.sum) / double(count));
  self->send_exit(persistence, caf::exit_reason::user_shutdown);
  return double(rows) / elapsed;
}

double raw_copy(det::storage::database& db, const std::vector<int64_t>& trials, int64_t rows, int64_t batch_size) {
  auto start = clock_type::now();
  db.copy_raw_metrics(trials, rows, batch_size);
  return double(rows) / seconds_since(start);
}

} // namespace

int main(int argc, char** argv) {
  int64_t rows = 200000;
  int64_t batch_size = 100;
  int64_t reporters = 16;
  int rounds = 5;
  std::string db_url;
  std::string data_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--rows")
      rows = std::stoll(argv[i + 1]);
    else if (flag == "--batch")
      batch_size = std::stoll(argv[i + 1]);
    else if (flag == "--reporters")
      reporters = std::max<int64_t>(1, std::stoll(argv[i + 1]));
    else if (flag == "--rounds")
      rounds = std::max(1, std::stoi(argv[i + 1]));
    else if (flag == "--db")
      db_url = argv[i + 1];
    else if (flag == "--data-dir")
      data_dir = argv[i + 1];
    else {
      std::cerr << "bench_metric_ingestion: unknown option " << flag << "\n";
      return 2;
    }
  }
  std::optional<det::storage::embedded_postgres> pg;
  std::string temp_dir;
  try {
    if (db_url.empty()) {
      if (data_dir.empty()) {
        char tmpl[] = "/tmp/det-bench-XXXXXX";
        temp_dir = data_dir = ::mkdtemp(tmpl);
        std::filesystem::permissions(data_dir, std::filesystem::perms(0755));
      }
      pg.emplace(data_dir);
      pg->start();
      db_url = pg->conninfo();
    }
    auto db = std::make_shared<det::storage::database>(db_url);
    db->migrate();
    det::pb::Experiment e;
    e.set_name("ingestion bench");
    e.set_state(det::pb::STATE_ACTIVE);
    e.set_owner_id(det::storage::admin_user_id);
    auto exp_id = db->insert_experiment(e);
    // Each phase writes trials of its own, one per reporter, as new trials' rows arrive: in batch
    // order, not among the duplicates of earlier rounds.
    int64_t request = 0;
    auto new_trials = [&] {
      std::vector<int64_t> trials;
      for (int64_t i = 0; i < reporters; ++i) {
        det::pb::Trial t;
        t.set_experiment_id(exp_id);
        t.set_request_id(++request);
        t.set_state(det::pb::STATE_RUNNING);
        trials.push_back(db->insert_trial(t));
      }
      return trials;
    };

    caf::actor_system_config cfg;
    det::enable_quiet_scheduling(cfg);  // as every node's (the master's threads also wake every 10 ms)
    caf::actor_system sys{cfg};
    // Interleaved, each going first in turn, so that both see the same server state and table size.
    double raw_best = 0, actor_best = 0;
    std::vector<double> ratios;
    for (int round = 0; round < rounds; ++round) {
      double raw = 0, actor = 0;
      for (int phase = 0; phase < 2; ++phase) {
        if ((phase + round) % 2 == 0)
          raw = raw_copy(*db, new_trials(), rows, batch_size);
        else
          actor = through_actor(sys, db, db_url, new_trials(), rows, batch_size);
      }
      std::printf("round %d: raw COPY %.0f rows/s, persistence actor %.0f rows/s, ratio %.3f\n", round + 1, raw,
                  actor, actor / raw);
      raw_best = std::max(raw_best, raw);
      actor_best = std::max(actor_best, actor);
      ratios.push_back(actor / raw);
    }
    std::sort(ratios.begin(), ratios.end());
    std::printf("rows=%lld batch=%lld reporters=%lld raw_copy_rows_per_s=%.0f actor_rows_per_s=%.0f (best of each) "
                "ratio_median=%.3f ratio_min=%.3f ratio_max=%.3f\n",
                static_cast<long long>(rows), static_cast<long long>(batch_size), static_cast<long long>(reporters),
                raw_best, actor_best, ratios[ratios.size() / 2], ratios.front(), ratios.back());
  } catch (const std::exception& ex) {
    std::cerr << "bench_metric_ingestion: " << ex.what() << "\n";
    return 1;
  }
  if (pg)
    pg->stop();
  if (!temp_dir.empty())
    std::filesystem::remove_all(temp_dir);
  return 0;
}
