"""Stage 3: a hyperparameter search. The searcher metric is x; the searcher may stop a trial
early through preemption."""

import logging
import time

import determined as det


def main(core_context, trial_id, increment_by):
    x = 0
    for batch in range(100):
        x += increment_by
        steps_completed = batch + 1
        time.sleep(0.02)
        if steps_completed % 10 == 0:
            core_context.train.report_training_metrics(steps_completed=steps_completed, metrics={"x": x})
            core_context.train.report_validation_metrics(steps_completed=steps_completed, metrics={"x": x})
            core_context.train.report_progress(steps_completed / 100.0)
            if core_context.preempt.should_preempt():
                return


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on a cluster"
    with det.core.init() as core_context:
        main(core_context, info.trial.trial_id, info.trial.hparams["increment_by"])
