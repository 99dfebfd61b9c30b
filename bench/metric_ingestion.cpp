// Metric ingestion: rows made durable per second through the persistence
// actor (MetricBatch messages, buffered, written with COPY, each acknowledged
// once committed) divided by a raw COPY of the same rows into the same server,
// both in this process. The actor gets up to --reporters batches in flight, as
// that many workers each waiting for their last report's acknowledgement.
//
//   bench_metric_ingestion [--rows N] [--batch N] [--reporters 16] [--db URL | --data-dir DIR]
//
// Without --db it starts an embedded PostgreSQL in a fresh temporary directory.

#include <algorithm>
#include <chrono>
#include <deque>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "actors/change_feed.hpp"
#include "messages/timestamp.hpp"

#include "actors/spawn.hpp"
#include "caf/all.hpp"
#include "storage/database.hpp"
#include "storage/embedded_postgres.hpp"

namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Rows per second through the persistence actor: every batch is acknowledged
// (as a worker's are), then a flush makes the tail durable.
double through_actor(caf::actor_system& sys, std::shared_ptr<det::storage::database> db, const std::string& db_url,
                     int64_t trial, int64_t rows, int64_t batch_size, int64_t reporters) {
  auto persistence = det::spawn_persistence(sys, db, std::make_shared<det::storage::database>(db_url),
                                            std::make_shared<det::change_feed>());
  caf::scoped_actor self{sys};
  using handle = decltype(self->request(persistence, std::chrono::seconds(60), det::pb::MetricBatch{}));
  std::deque<handle> in_flight;
  auto collect_oldest = [&] {
    in_flight.front().receive([](int64_t) {}, [&](caf::error& e) { throw std::runtime_error(sys.render(e)); });
    in_flight.pop_front();
  };
  auto now = det::now();
  auto start = clock_type::now();
  for (int64_t sent = 0; sent < rows;) {
    det::pb::MetricBatch batch;
    for (int64_t i = 0; i < batch_size && sent < rows; ++i, ++sent) {
      auto* r = batch.add_reports();
      r->set_trial_id(trial);
      r->set_group("training");
      r->set_total_batches(sent + 1);
      r->set_total_records((sent + 1) * 32);
      r->set_total_epochs(double(sent + 1) / 1000.0);
      (*r->mutable_metrics())["loss"] = 1.0 / double(sent + 1);
      *r->mutable_time() = now;
    }
    if (static_cast<int64_t>(in_flight.size()) >= reporters) collect_oldest();
    in_flight.push_back(self->request(persistence, std::chrono::seconds(60), std::move(batch)));
  }
  while (!in_flight.empty()) collect_oldest();
  self->request(persistence, std::chrono::seconds(300), det::flush_atom::value)
      .receive([](int64_t) {}, [&](caf::error& e) { throw std::runtime_error(sys.render(e)); });
  auto elapsed = seconds_since(start);
  self->send_exit(persistence, caf::exit_reason::user_shutdown);
  return double(rows) / elapsed;
}

double raw_copy(det::storage::database& db, int64_t trial, int64_t rows) {
  auto start = clock_type::now();
  db.copy_raw_metrics(trial, rows);
  return double(rows) / seconds_since(start);
}

} // namespace

int main(int argc, char** argv) {
  int64_t rows = 200000;
  int64_t batch_size = 100;
  int64_t reporters = 16;
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
    e.set_owner_id(det::storage::database::admin_user_id);
    auto exp_id = db->insert_experiment(e);
    det::pb::Trial t;
    t.set_experiment_id(exp_id);
    t.set_request_id(1);
    t.set_state(det::pb::STATE_RUNNING);
    auto trial = db->insert_trial(t);

    caf::actor_system_config cfg;
    caf::actor_system sys{cfg};
    // Interleaved, so that both see the same server state and table size.
    double raw_best = 0, actor_best = 0;
    for (int round = 0; round < 3; ++round) {
      double raw = raw_copy(*db, trial, rows);
      double actor = through_actor(sys, db, db_url, trial, rows, batch_size, reporters);
      std::printf("round %d: raw COPY %.0f rows/s, persistence actor %.0f rows/s\n", round + 1, raw,
                  actor);
      raw_best = std::max(raw_best, raw);
      actor_best = std::max(actor_best, actor);
    }
    std::printf("rows=%lld batch=%lld reporters=%lld raw_copy_rows_per_s=%.0f actor_rows_per_s=%.0f ratio=%.3f\n",
                static_cast<long long>(rows), static_cast<long long>(batch_size), static_cast<long long>(reporters),
                raw_best, actor_best, actor_best / raw_best);
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
