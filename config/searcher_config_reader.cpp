#include "config/section_readers.hpp"

#include <algorithm>
#include <limits>
#include <sstream>

namespace det::config::detail {

namespace {

constexpr int64_t no_limit = std::numeric_limits<int64_t>::max();

// Ceilings on what one search may ask for. A preview simulates the whole search and a searcher
// keeps a record per trial, so these bound the work one request can make the master do; each is
// far beyond a search anyone runs (Determined's defaults are 5 rungs and tens of trials).
constexpr int64_t most_trials = 1'000'000;
constexpr int64_t most_rungs = 64;
constexpr int64_t most_population = 10'000;
constexpr int64_t most_pbt_trials = 1'000'000;  // population_size × num_rounds
constexpr int64_t most_ei_candidates = 100'000;

/// Whether a searcher needs a training length (max_length, or time_metric and max_time).
enum class length_rule {
  /// Its decisions are made at lengths: always.
  required,
  /// Determined 0.38's single, random and grid: only when no process decides it (a harness trial).
  unless_process_decides,
  /// It asks for lengths its own way (pbt's rounds, a custom searcher's client).
  none,
};

/// What one searcher takes: the keys it accepts besides name, metric, smaller_is_better and the
/// warm-start keys, those it requires, and when it needs a training length.
struct searcher_kind {
  std::string_view name;
  std::vector<std::string_view> fields;
  std::vector<std::string_view> required;
  length_rule length;
};

const std::vector<searcher_kind>& searcher_kinds() {
  static const std::vector<searcher_kind> kinds = {
      {"single", {"max_length", "time_metric", "max_time"}, {}, length_rule::unless_process_decides},
      {"random", {"max_length", "time_metric", "max_time", "max_trials", "max_concurrent_trials"},
       {"max_trials"}, length_rule::unless_process_decides},
      {"grid", {"max_length", "time_metric", "max_time", "max_concurrent_trials"}, {},
       length_rule::unless_process_decides},
      {"async_halving",
       {"max_length", "time_metric", "max_time", "num_rungs", "max_trials", "divisor",
        "max_concurrent_trials", "stop_once"},
       {"num_rungs", "max_trials"}, length_rule::required},
      {"asha",
       {"max_length", "time_metric", "max_time", "num_rungs", "max_trials", "divisor",
        "max_concurrent_trials", "stop_once"},
       {"num_rungs", "max_trials"}, length_rule::required},
      {"adaptive_asha",
       {"max_length", "time_metric", "max_time", "max_trials", "mode", "divisor", "max_rungs",
        "bracket_rungs", "max_concurrent_trials", "stop_once"},
       {"max_trials"}, length_rule::required},
      {"pbt",
       {"population_size", "num_rounds", "length_per_round", "replace_function", "explore_function"},
       {"population_size", "num_rounds", "length_per_round", "replace_function", "explore_function"},
       length_rule::none},
      {"tpe", {"max_length", "time_metric", "max_time", "max_trials", "max_concurrent_trials",
               "n_startup_trials", "n_ei_candidates", "gamma"},
       {"max_trials"}, length_rule::required},
      // Driven by a user's process over REST, which asks for every length itself.
      {"custom", {"unit"}, {}, length_rule::none},
  };
  return kinds;
}

/// Searchers Determined no longer runs, and what a user should pick instead.
std::optional<std::string> end_of_life_advice(std::string_view name) {
  if (name == "sync_halving")
    return "the sync_halving searcher was removed from Determined; use async_halving instead";
  if (name == "adaptive" || name == "adaptive_simple")
    return "the " + std::string(name) + " searcher was removed in Determined 0.15; use adaptive_asha instead";
  return std::nullopt;
}

std::string known_names() {
  std::string names;
  const auto& kinds = searcher_kinds();
  for (size_t i = 0; i < kinds.size(); ++i)
    names += std::string(i == 0 ? "" : i + 1 == kinds.size() ? " or " : ", ") + std::string(kinds[i].name);
  return names;
}

std::optional<double> read_fraction(table_reader& reader, std::string_view key, double hi) {
  auto value = reader.read_number(key);
  if (!value) {
    if (!reader.source_table().contains(key)) reader.missing(key);
    return std::nullopt;
  }
  if (*value < 0 || *value > hi) {
    std::ostringstream sentence;
    sentence << "must be between 0 and " << hi << ", got " << *value;
    reader.error(key, sentence.str());
    return std::nullopt;
  }
  return value;
}

void read_pbt_functions(table_reader& reader, searcher_config& config) {
  if (const auto* table = reader.read_table("replace_function")) {
    table_reader replace(*table, reader.path_of("replace_function"), reader.diag());
    if (auto v = read_fraction(replace, "truncate_fraction", 0.5)) config.truncate_fraction = *v;
    replace.report_unknown_keys();
  }
  if (const auto* table = reader.read_table("explore_function")) {
    table_reader explore(*table, reader.path_of("explore_function"), reader.diag());
    if (auto v = read_fraction(explore, "resample_probability", 1)) config.resample_probability = *v;
    if (auto v = read_fraction(explore, "perturb_factor", 1)) config.perturb_factor = *v;
    explore.report_unknown_keys();
  }
}

/// `max_length`: a length such as { batches = 100 }, or Determined's unitless positive integer,
/// which det counts in batches (the steps a Core API script reports).
std::optional<length> read_searcher_length(table_reader& reader) {
  const auto* node = reader.source_table().get("max_length");
  if (node && node->is_integer()) {
    if (auto v = reader.read_integer_in("max_length", 1, no_limit)) return length{length_unit::batches, *v};
    return std::nullopt;
  }
  return read_length(reader, "max_length", 1);
}

void read_fields(table_reader& reader, searcher_config& config) {
  if (auto v = reader.read_string("metric")) config.metric = *v;
  if (auto v = reader.read_boolean("smaller_is_better")) config.smaller_is_better = *v;
  config.max_length = read_searcher_length(reader);
  if (auto v = reader.read_string("time_metric")) {
    if (*v == "batches" || *v == "records" || *v == "epochs")
      config.time_metric = *v;
    else
      reader.error("time_metric", "det measures training time in batches, records or epochs, got \"" + *v + "\"");
  }
  config.max_time = reader.read_integer_in("max_time", 1, no_limit);
  if (auto v = reader.read_string("unit")) {
    if (auto unit = length_unit_from_string(*v))
      config.unit = *unit;
    else
      reader.error("unit", "expected batches, records or epochs, got \"" + *v + "\"");
  }
  if (auto v = reader.read_integer_in("max_trials", 1, most_trials)) config.max_trials = *v;
  if (auto v = reader.read_integer_in("max_concurrent_trials", 0, most_trials)) config.max_concurrent_trials = *v;
  if (auto v = reader.read_integer_in("num_rungs", 1, most_rungs)) config.num_rungs = *v;
  if (auto v = reader.read_integer_in("n_startup_trials", 0, most_trials)) config.n_startup_trials = *v;
  if (auto v = reader.read_integer_in("n_ei_candidates", 1, most_ei_candidates)) config.n_ei_candidates = *v;
  if (auto v = reader.read_number("gamma")) {
    if (*v > 0 && *v <= 1)
      config.gamma = *v;
    else
      reader.error("gamma", "must be greater than 0 and at most 1");
  }
  if (auto v = reader.read_number("divisor")) {
    if (*v > 1)
      config.divisor = *v;
    else
      reader.error("divisor", "must be greater than 1");
  }
  if (auto v = reader.read_integer_in("max_rungs", 1, most_rungs)) config.max_rungs = *v;
  if (auto v = reader.read_string("mode")) {
    if (*v == "standard" || *v == "aggressive" || *v == "conservative")
      config.mode = *v;
    else
      reader.error("mode", "expected standard, aggressive or conservative, got \"" + *v + "\"");
  }
  if (const auto* rungs = reader.read_array("bracket_rungs")) {
    if (static_cast<int64_t>(rungs->size()) > most_rungs)
      reader.error("bracket_rungs", "may hold at most " + std::to_string(most_rungs) + " brackets, got " +
                                        std::to_string(rungs->size()));
    for (const auto& rung : *rungs) {
      if (static_cast<int64_t>(config.bracket_rungs.size()) >= most_rungs) break;
      if (!rung.is_integer() || rung.as_integer()->get() < 1 || rung.as_integer()->get() > most_rungs) {
        reader.error("bracket_rungs", "expected an array of integers between 1 and " + std::to_string(most_rungs));
        break;
      }
      config.bracket_rungs.push_back(rung.as_integer()->get());
    }
  }
  if (auto v = reader.read_integer_in("population_size", 1, most_population)) config.population_size = *v;
  if (auto v = reader.read_integer_in("num_rounds", 1, most_pbt_trials)) {
    config.num_rounds = *v;
    if (config.population_size * config.num_rounds > most_pbt_trials)
      reader.error("num_rounds", "population_size × num_rounds is the number of trials pbt runs, at most " +
                                     std::to_string(most_pbt_trials) + ", got " +
                                     std::to_string(config.population_size * config.num_rounds));
  }
  config.length_per_round = read_length(reader, "length_per_round", 1);
  read_pbt_functions(reader, config);
  config.source_trial_id = reader.read_integer_in("source_trial_id", 1, no_limit);
  if (auto v = reader.read_string("source_checkpoint_uuid")) config.source_checkpoint_uuid = *v;
  if (config.source_trial_id && !config.source_checkpoint_uuid.empty())
    reader.error("source_checkpoint_uuid", "set source_trial_id or source_checkpoint_uuid, not both");
  if (auto v = reader.read_boolean("source_resumes")) {
    config.source_resumes = *v;
    if (*v && !config.source_trial_id && config.source_checkpoint_uuid.empty())
      reader.error("source_resumes", "resumes from source_trial_id or source_checkpoint_uuid: set one");
  }
  // The pre-0.38 ASHA switch: det's async_halving always stops trials.
  reader.read_boolean("stop_once");
}

/// Why a searcher without a length cannot run this entrypoint, or "" when it can.
std::string missing_length_sentence(const searcher_kind& kind, length_decider decider) {
  const std::string name(kind.name);
  switch (kind.length) {
    case length_rule::none:
      return "";
    case length_rule::required:
      return "the " + name + " searcher decides at training lengths, so it needs one: set time_metric and "
             "max_time (or max_length = { batches = N })";
    case length_rule::unless_process_decides:
      break;
  }
  switch (decider) {
    case length_decider::process:
      return "";  // the process trains until it exits
    case length_decider::harness:
      return "det's harness trains builtin: and plugin: trials to the searcher's length, with no script "
             "of yours to decide when to stop, so the " + name + " searcher needs one here: set "
             "max_length = { batches = N }, or time_metric and max_time";
    case length_decider::legacy_trial_class:
      return "a model_def:TrialClass entrypoint trains for the searcher's length, as Determined's harness "
             "does, so the " + name + " searcher needs one here: set max_length = { batches = N } (or records, "
             "epochs), or time_metric and max_time";
  }
  return "";
}

void check_fields_for(table_reader& reader, const searcher_kind& kind, length_decider decider) {
  static const std::vector<std::string_view> common = {
      "name", "metric", "smaller_is_better", "source_trial_id", "source_checkpoint_uuid", "source_resumes"};
  const auto& table = reader.source_table();
  for (auto&& [key, node] : table) {
    auto name = key.str();
    auto listed = [&](const std::vector<std::string_view>& keys) {
      return std::find(keys.begin(), keys.end(), name) != keys.end();
    };
    if (listed(common) || listed(kind.fields)) continue;
    bool another_searchers = std::any_of(searcher_kinds().begin(), searcher_kinds().end(),
                                         [&](const searcher_kind& other) { return listed(other.fields); });
    // Keys no searcher takes are reported as unknown by report_unknown_keys().
    if (another_searchers)
      reader.error(name, "is not a setting of the " + std::string(kind.name) + " searcher");
  }
  for (auto key : kind.required)
    if (!table.contains(key)) reader.missing(key);
  if (!table.contains("metric")) reader.missing("metric");
  if (kind.length == length_rule::none) return;

  bool has_max_length = table.contains("max_length");
  bool has_time_metric = table.contains("time_metric");
  bool has_max_time = table.contains("max_time");
  if (has_time_metric && !has_max_time) reader.missing("max_time");
  if (has_max_time && !has_time_metric) reader.missing("time_metric");
  if (has_max_length && (has_time_metric || has_max_time))
    reader.error_here("set either max_length or time_metric and max_time, not both");
  if (!has_max_length && !has_time_metric && !has_max_time) {
    auto sentence = missing_length_sentence(kind, decider);
    if (!sentence.empty()) reader.error_here(sentence);
  }
}

} // namespace

searcher_config read_searcher_config(table_reader& root, length_decider decider) {
  searcher_config config;
  const auto* table = root.read_table("searcher");
  if (!table) {
    if (!root.source_table().contains("searcher")) root.missing("searcher");
    return config;
  }
  table_reader reader(*table, root.path_of("searcher"), root.diag());
  auto name = reader.read_string("name");
  if (!name) {
    if (!table->contains("name")) reader.missing("name");
    return config;
  }
  config.name = *name;
  if (auto advice = end_of_life_advice(*name)) {
    reader.error("name", *advice);
    return config;
  }
  const auto& kinds = searcher_kinds();
  auto kind = std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.name == *name; });
  if (kind == kinds.end()) {
    reader.error("name", "unknown searcher \"" + *name + "\"; expected " + known_names());
    return config;
  }
  read_fields(reader, config);
  check_fields_for(reader, *kind, decider);
  reader.report_unknown_keys();
  return config;
}

} // namespace det::config::detail
