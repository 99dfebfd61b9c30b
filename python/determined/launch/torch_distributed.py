"""python3 -m determined.launch.torch_distributed [--] SCRIPT...

Starts SCRIPT once per slot of this container (DET_SLOT_IDS; at least one process) with the
variables torch.distributed.run would give it: RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
GROUP_RANK, GROUP_WORLD_SIZE, ROLE_RANK, ROLE_WORLD_SIZE, MASTER_ADDR and MASTER_PORT, so that
both torch.distributed.init_process_group() and
core.DistributedContext.from_torch_distributed() work. Each process runs under wrap_rank, which
prefixes its lines with "[rank=N] ". SIGTERM and SIGINT are passed on to every process; when
one exits non-zero the others are stopped, and that first non-zero code is this one's.

Determined hands this to torch.distributed.run; det starts the processes itself, so that
training needs no torch (and Determined's TORCH_OVERRIDES have nothing to apply to).

One container (one agent) is a run's usual shape: its processes meet on 127.0.0.1 at free
ports. A run whose slots span agents has one container on each (det runs the entrypoint once per
agent, telling each its place in DET_CONTAINER_RANK and DET_CONTAINER_ADDRS, rank 0's address
first); they meet at fixed ports that every container agrees on, C10D_PORT (29400) and
INTER_TRAIN_PROCESS_COMM_PORT_1 (12360), as in Determined, and each container is taken to have
as many slots as this one (det does not tell the others' counts).
"""

import os
import signal
import socket
import subprocess
import sys
import time
from typing import List

from determined._info import _listed
from determined.launch.wrap_rank import _die_with_parent
from determined.core._distributed import INTER_TRAIN_PROCESS_COMM_PORT_1

C10D_PORT = int(os.environ.get("C10D_PORT", "29400"))

# After a process fails, how long the others get to exit on SIGTERM before they are killed (a
# rank waiting on the failed one in a collective never would).
KILL_GRACE_S = 10.0

USAGE = "usage: python3 -m determined.launch.torch_distributed [--] SCRIPT... | --trial MODULE:TRIAL_CLASS"


def _free_ports(count: int) -> List[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def parse_args(args: List[str]) -> List[str]:
    """SCRIPT, or exits with a sentence for what det's launcher cannot do."""
    if "--" in args:
        split = args.index("--")
        if split > 0:
            sys.exit(f"{USAGE}\nerror: det launches the processes itself; torch.distributed.run "
                     f"overrides ({' '.join(args[:split])}) do not apply")
        args = args[split + 1:]
    if args[:1] == ["--trial"]:
        # Determined's legacy form: each process runs the trial class through the harness.
        if len(args) != 2:
            sys.exit(f"{USAGE}\nerror: --trial takes one MODULE:TRIAL_CLASS")
        return [sys.executable, "-m", "determined.exec.harness", args[1]]
    if not args:
        sys.exit(f"{USAGE}\nerror: empty script is not allowed")
    return args


def _exit_code(returncode: int) -> int:
    return 128 - returncode if returncode < 0 else returncode


def main(script: List[str]) -> int:
    env = os.environ
    slots = max(1, len(_listed(env.get("DET_SLOT_IDS"))))
    addresses = _listed(env.get("DET_CONTAINER_ADDRS")) or ["127.0.0.1"]
    container_rank = int(env.get("DET_CONTAINER_RANK") or 0)
    if len(addresses) > 1:
        master_addr, master_port, comm_port = addresses[0], C10D_PORT, INTER_TRAIN_PROCESS_COMM_PORT_1
    else:
        master_addr = "127.0.0.1"
        master_port, comm_port = _free_ports(2)
    shared = {
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "WORLD_SIZE": str(slots * len(addresses)),
        "ROLE_WORLD_SIZE": str(slots * len(addresses)),
        "LOCAL_WORLD_SIZE": str(slots),
        "GROUP_RANK": str(container_rank),
        "GROUP_WORLD_SIZE": str(len(addresses)),
        "DET_CHIEF_IP": master_addr,
        "USE_TORCH_DISTRIBUTED": "True",
        # DistributedContext's port: a free one, so that two trials on one agent do not collide.
        "INTER_TRAIN_PROCESS_COMM_PORT_1": str(comm_port),
        # Output goes through wrap_rank's pipes: unbuffered, it arrives line by line as written.
        "PYTHONUNBUFFERED": env.get("PYTHONUNBUFFERED", "1"),
    }
    procs: List[subprocess.Popen] = []

    def forward(signum: int, _frame: object) -> None:
        for p in procs:
            p.send_signal(signum)

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, forward)
    for local_rank in range(slots):
        rank = container_rank * slots + local_rank
        child_env = dict(env, **shared, RANK=str(rank), ROLE_RANK=str(rank), LOCAL_RANK=str(local_rank))
        # Each rank dies with the launcher: det kills a failed run's other containers with SIGKILL,
        # which the launcher cannot pass on, and a rank left behind would hold the run's ports.
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "determined.launch.wrap_rank", str(rank), "--", *script], env=child_env,
            preexec_fn=_die_with_parent))

    failure, kill_at = 0, 0.0
    while True:
        codes = [p.poll() for p in procs]
        if failure == 0:
            failure = next((_exit_code(c) for c in codes if c), 0)
            if failure:
                kill_at = time.monotonic() + KILL_GRACE_S
                for p in procs:
                    p.terminate()
        if all(c is not None for c in codes):
            return failure
        if failure and time.monotonic() > kill_at:
            for p in procs:
                p.kill()
        time.sleep(0.1)


if __name__ == "__main__":
    sys.exit(main(parse_args(sys.argv[1:])))
