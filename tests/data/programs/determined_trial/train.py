"""A script written for Determined's Core API, unchanged: metrics, checkpoints, searcher
operations, preemption and a distributed context over every container of its trial."""

import os
import time

import determined as det
from determined import core

info = det.get_cluster_info()
distributed = None
if len(info.container_addrs) > 1:  # one container per agent (Determined's launcher model)
    size = len(info.container_addrs)
    distributed = core.DistributedContext(rank=info.container_rank, size=size, local_rank=0, local_size=1,
                                          cross_rank=info.container_rank, cross_size=size,
                                          chief_ip=info.container_addrs[0])

with core.init(distributed=distributed) as core_context:
    ranks = core_context.distributed.allgather(core_context.distributed.rank)
    chief = core_context.distributed.rank == 0
    steps = 0
    if info.latest_checkpoint:
        with core_context.checkpoint.restore_path(info.latest_checkpoint) as path:
            with open(os.path.join(path, "steps")) as f:
                steps = int(f.read())
        print(f"restored from step {steps}", flush=True)
    for op in core_context.searcher.operations():
        while steps < op.length:
            steps += 1
            time.sleep(0.05)
            if chief:
                core_context.train.report_training_metrics(
                    steps_completed=steps, metrics={"loss": 1.0 / steps, "rank_sum": float(sum(ranks))})
                op.report_progress(steps)
            if core_context.preempt.should_preempt():
                if chief:
                    with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, _):
                        with open(os.path.join(path, "steps"), "w") as f:
                            f.write(str(steps))
                exit(0)
        if chief:
            core_context.train.report_validation_metrics(steps_completed=steps, metrics={"validation_loss": 1.0 / steps})
            with core_context.checkpoint.store_path({"steps_completed": steps}) as (path, storage_id):
                with open(os.path.join(path, "steps"), "w") as f:
                    f.write(str(steps))
            op.report_completed(1.0 / steps)
