// Prometheus' text format: escaping, number spelling and histograms as the format requires;
// tests/integration/prometheus_test.py lints a live master's scrape with promtool.

#include <doctest/doctest.h>

#include "observability/measurements.hpp"
#include "observability/prometheus_text.hpp"

using namespace det::observability;

TEST_CASE("a family has one HELP and TYPE, then its samples with escaped label values") {
  exposition out;
  out.family("det_experiment_id_label", "A label.\nSecond line \\ done", metric_type::gauge,
             {{{{"experiment_id", "3"}, {"label", "say \"hi\"\\\n"}}, 1}, {{{"experiment_id", "4"}, {"label", "b"}}, 1}});
  CHECK(out.take() ==
        "# HELP det_experiment_id_label A label.\\nSecond line \\\\ done\n"
        "# TYPE det_experiment_id_label gauge\n"
        "det_experiment_id_label{experiment_id=\"3\",label=\"say \\\"hi\\\"\\\\\\n\"} 1\n"
        "det_experiment_id_label{experiment_id=\"4\",label=\"b\"} 1\n");
}

TEST_CASE("numbers read back exactly, with Go's spellings of the special values") {
  exposition out;
  out.family("x", "x", metric_type::gauge,
             {{{{"k", "a"}}, 0.1}, {{{"k", "b"}}, 1e20}, {{{"k", "c"}}, -3}, {{{"k", "d"}}, 1.0 / 0.0},
              {{{"k", "e"}}, 0.0 / 0.0}});
  const auto text = out.take();
  CHECK(text.find("x{k=\"a\"} 0.1\n") != std::string::npos);
  CHECK(text.find("x{k=\"b\"} 1e+20\n") != std::string::npos);
  CHECK(text.find("x{k=\"c\"} -3\n") != std::string::npos);
  CHECK(text.find("x{k=\"d\"} +Inf\n") != std::string::npos);
  CHECK(text.find("x{k=\"e\"} NaN\n") != std::string::npos);
}

TEST_CASE("a histogram's buckets are cumulative, end in +Inf equal to the count, and sum what was observed") {
  histogram h({0.25, 1});
  h.observe(0.125);
  h.observe(0.25);  // le: on the bound is inside the bucket
  h.observe(0.5);
  h.observe(7);
  exposition out;
  out.histograms("det_pass_seconds", "Passes.", {{{{"resource_pool", "default"}}, h.read()}});
  CHECK(out.take() ==
        "# HELP det_pass_seconds Passes.\n"
        "# TYPE det_pass_seconds histogram\n"
        "det_pass_seconds_bucket{resource_pool=\"default\",le=\"0.25\"} 2\n"
        "det_pass_seconds_bucket{resource_pool=\"default\",le=\"1\"} 3\n"
        "det_pass_seconds_bucket{resource_pool=\"default\",le=\"+Inf\"} 4\n"
        "det_pass_seconds_sum{resource_pool=\"default\"} 7.875\n"
        "det_pass_seconds_count{resource_pool=\"default\"} 4\n");
}

TEST_CASE("a histogram family makes one histogram per label value, listed in order") {
  histogram_family f({1});
  f.with("b").observe(2);
  f.with("a").observe(0.5);
  f.with("b").observe(0.5);
  auto members = f.read();
  REQUIRE(members.size() == 2);
  CHECK(members[0].first == "a");
  CHECK(members[0].second.count == 1);
  CHECK(members[1].first == "b");
  CHECK(members[1].second.count == 2);
  CHECK(members[1].second.cumulative[0] == 1);
}
