// A plugin library for trial_api_version_test.cpp: one trial exported as DET_TRIAL exports it
// today, one as plugins did before DET_TRIAL exported a version, and one that claims a later
// Trial API.

#include "det/trial.hpp"

namespace {

/// Trains on nothing: one batch of one record per step, constant metrics.
class tiny_trial : public det::trial {
 public:
  explicit tiny_trial(det::trial_context&) {}
  int64_t batch_size() const override { return 1; }
  int64_t records_per_epoch() const override { return 10; }
  det::metrics train_batch(det::batch&, int64_t, int64_t) override { return {{"loss", 0.5}}; }
  det::metrics evaluate_full() override { return {{"validation_loss", 0.5}}; }
  void save(const std::string&) override {}
  void load(const std::string&, bool) override {}
};

}  // namespace

using Current = tiny_trial;
DET_TRIAL(Current)

// A plugin built before versioning: the factory alone.
extern "C" det::trial* det_make_trial_Unversioned(det::trial_context& context) {
  return new tiny_trial(context);
}

// A plugin built against a Trial API newer than this det's.
extern "C" int det_trial_api_version_Newer() {
  return DET_TRIAL_API_VERSION + 1;
}
extern "C" det::trial* det_make_trial_Newer(det::trial_context& context) {
  return new tiny_trial(context);
}
