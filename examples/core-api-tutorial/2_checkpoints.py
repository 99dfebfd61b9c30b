"""Stage 2: checkpoints, progress and preemption. A paused trial checkpoints and exits; activated
again, it goes on from that checkpoint. A checkpoint of another trial gives only its weight."""

import logging
import pathlib
import time

import determined as det


def save_state(x, steps_completed, trial_id, directory):
    directory.joinpath("state").write_text(f"{x},{steps_completed},{trial_id}")


def load_state(trial_id, directory):
    x, steps_completed, saved_by = (int(v) for v in pathlib.Path(directory).joinpath("state").read_text().split(","))
    return (x, steps_completed) if saved_by == trial_id else (x, 0)


def main(core_context, latest_checkpoint, trial_id, increment_by):
    x = 0
    max_length = 100
    starting_batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, starting_batch = load_state(trial_id, path)

    for batch in range(starting_batch, max_length):
        x += increment_by
        steps_completed = batch + 1
        time.sleep(0.05)
        if steps_completed % 10 == 0:
            core_context.train.report_training_metrics(steps_completed=steps_completed, metrics={"x": x})
            core_context.train.report_progress(steps_completed / float(max_length))
            with core_context.checkpoint.store_path({"steps_completed": steps_completed}) as (path, uuid):
                save_state(x, steps_completed, trial_id, path)
            if core_context.preempt.should_preempt():
                return  # just checkpointed: resume from here

    core_context.train.report_validation_metrics(steps_completed=steps_completed, metrics={"x": x})


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on a cluster"
    with det.core.init() as core_context:
        main(core_context, info.latest_checkpoint, info.trial.trial_id, increment_by=1)
