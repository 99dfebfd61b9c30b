"""Stage 4: the same training on several processes, one per slot, started by Determined's launcher
(entrypoint: python3 -m determined.launch.torch_distributed -- python3 4_distributed.py). Every
process adds its increment each batch; the chief reports and checkpoints. The length is the one
operation searcher.operations() makes from searcher.max_length (deprecated in Determined 0.38)."""

import logging
import pathlib

import determined as det


def main(core_context, latest_checkpoint, trial_id, increment_by):
    x = 0
    batch = 0
    if latest_checkpoint is not None:
        with core_context.checkpoint.restore_path(latest_checkpoint) as path:
            x, batch, saved_by = (int(v) for v in pathlib.Path(path, "state").read_text().split(","))
            batch = batch if saved_by == trial_id else 0
    chief = core_context.distributed.rank == 0
    for op in core_context.searcher.operations():
        while batch < op.length:
            x += sum(core_context.distributed.allgather(increment_by))
            batch += 1
            if batch % 10 == 0 and chief:
                core_context.train.report_training_metrics(steps_completed=batch, metrics={"x": x})
                op.report_progress(batch)
                with core_context.checkpoint.store_path({"steps_completed": batch}) as (path, uuid):
                    pathlib.Path(path, "state").write_text(f"{x},{batch},{trial_id}")
            if batch % 10 == 0 and core_context.preempt.should_preempt():
                return
        if chief:
            core_context.train.report_validation_metrics(steps_completed=batch, metrics={"x": x})
            op.report_completed(x)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)
    info = det.get_cluster_info()
    assert info is not None, "this example only runs on a cluster"
    distributed = det.core.DistributedContext.from_torch_distributed()
    with det.core.init(distributed=distributed) as core_context:
        main(core_context, info.latest_checkpoint, info.trial.trial_id, info.trial.hparams["increment_by"])
