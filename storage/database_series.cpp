// One metric of a trial as a chart's columns, downsampled in the database when the range holds
// more reports than the chart asked for: the smallest and the largest value of each bucket of
// batches stand for the bucket, so spikes and dips survive (Determined samples at random and
// loses them).

#include <algorithm>
#include <cmath>
#include <utility>
#include <cstdlib>

#include "storage/database_impl.hpp"

namespace det::storage {

namespace {

// A report's batches and its value of the metric ($5), in the trial's range.
const std::string series_source =
    "SELECT total_batches::float8 AS x, (metrics ->> $5)::float8 AS y FROM metrics "
    "WHERE trial_id = $1 AND \"group\" = $2 AND total_batches BETWEEN $3::bigint AND $4::bigint AND metrics ? $5";

// Buckets of equal width in batches ($6 of them over [$3, $4]); each gives its count and its
// extreme points as {y, x} arrays, whose order is y's, then x's.
const std::string bucket_extremes =
    "SELECT count(*), min(ARRAY[y, x])::text, max(ARRAY[y, x])::text FROM (" + series_source +
    ") s GROUP BY floor((x - $3::bigint) * $6::float8 / ($4::bigint - $3::bigint + 1))";

struct point {
  double x, y;
  // NaN (stored as "NaN") orders after every number, as PostgreSQL orders it: a strict weak order.
  std::pair<double, std::pair<bool, double>> key() const { return {x, {std::isnan(y), std::isnan(y) ? 0.0 : y}}; }
  bool operator<(const point& o) const { return key() < o.key(); }
  bool operator==(const point& o) const { return key() == o.key(); }
};

// "{y,x}" as PostgreSQL prints a float8 array.
point point_of(const std::string& text) {
  char* end = nullptr;
  const double y = std::strtod(text.c_str() + 1, &end);
  const double x = std::strtod(end + 1, nullptr);
  return {x, y};
}

}  // namespace

pb::MetricSeries database::metric_series(int64_t trial_id, const std::string& group, const std::string& name,
                                         int64_t start_batches, int64_t end_batches, int32_t max_points) {
  return describing_failure("read metric " + name + " of trial " + std::to_string(trial_id), [&] {
    pqxx::read_transaction tx{impl_->connection};
    pb::MetricSeries out;
    out.set_trial_id(trial_id);
    out.set_group(group);
    out.set_name(name);
    // Whole when it fits: reading one row more than asked for tells whether it does.
    const auto rows = tx.exec_params(series_source + " ORDER BY total_batches LIMIT $6", trial_id, group, start_batches,
                                     end_batches, name, static_cast<int64_t>(max_points) + 1);
    if (rows.size() <= static_cast<size_t>(max_points)) {
      out.set_points_in_range(static_cast<int64_t>(rows.size()));
      for (const auto& row : rows) {
        out.add_batches(row[0].as<double>());
        out.add_values(row[1].as<double>());
      }
      return out;
    }
    // Buckets span the batches that hold points, so that an open-ended range is not mostly empty.
    const auto first = static_cast<int64_t>(rows[0][0].as<double>());
    const auto last = tx.exec_params1(
        "SELECT max(total_batches) FROM metrics WHERE trial_id = $1 AND \"group\" = $2 AND total_batches <= $3 "
        "AND metrics ? $4",
        trial_id, group, end_batches, name)[0].as<int64_t>();
    std::vector<point> points;
    int64_t in_range = 0;
    for (const auto& row : tx.exec_params(bucket_extremes, trial_id, group, first, last, name,
                                          std::max<int64_t>(1, max_points / 2))) {
      in_range += row[0].as<int64_t>();
      points.push_back(point_of(row[1].as<std::string>()));
      points.push_back(point_of(row[2].as<std::string>()));
    }
    std::sort(points.begin(), points.end());
    points.erase(std::unique(points.begin(), points.end()), points.end());  // a bucket of one point
    out.set_points_in_range(in_range);
    out.set_downsampled(true);
    for (const auto& p : points) {
      out.add_batches(p.x);
      out.add_values(p.y);
    }
    return out;
  });
}

}  // namespace det::storage
