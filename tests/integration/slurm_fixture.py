"""A real single-node Slurm cluster (Debian's slurm-wlm and munge) for integration tests.

Runs as root: a private munged and slurmctld/slurmd on free 127.0.0.1 ports, with all state, logs
and sockets in a fresh directory under /tmp, so clusters of different tests never share anything.
Stops exactly the processes it started, by pid.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

MUNGE_KEY = "/etc/munge/munge.key"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def machine_memory_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no MemTotal in /proc/meminfo")


def tail(path, lines=20):
    try:
        with open(path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError as e:
        return f"({e})\n"


class SlurmCluster:
    """Usage: `with SlurmCluster() as slurm: subprocess.run(["sbatch", ...], env=slurm.env)`."""

    def __init__(self, partition="det"):
        self.partition = partition
        self.host = subprocess.run(["hostname", "-s"], check=True, capture_output=True,
                                   text=True).stdout.strip()
        # /tmp rather than the build tree: munged runs as the munge user and refuses directories
        # that others may write, and every path component must be reachable by it.
        self.root = tempfile.mkdtemp(prefix="det-slurm-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.munge_dir = os.path.join(self.root, "munge")
        self.munge_socket = os.path.join(self.munge_dir, "munge.socket")
        self.conf = os.path.join(self.root, "slurm.conf")
        self.env = dict(os.environ, SLURM_CONF=self.conf)
        self.procs = {}  # name -> Popen, in start order
        self._write_conf()

    @staticmethod
    def available():
        """False where a test should skip: no Slurm installed, or not root (daemons need it)."""
        return (shutil.which("slurmctld") is not None and shutil.which("munged") is not None
                and os.geteuid() == 0)

    def _write_conf(self):
        root = self.root
        cpus = os.cpu_count()
        # Leave the OS some memory; slurmd drains a node that reports less than RealMemory.
        memory = max(256, machine_memory_mb() - 1024)
        with open(self.conf, "w") as f:
            f.write(f"""ClusterName=det-test
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={free_port()}
SlurmdPort={free_port()}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={root}/state
SlurmdSpoolDir={root}/spool
SlurmctldPidFile={root}/slurmctld.pid
SlurmdPidFile={root}/slurmd.pid
SlurmctldLogFile={root}/slurmctld.log
SlurmdLogFile={root}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
# Memory is a consumable resource, and a job that asks for none would get the whole node's, so
# that jobs would run one at a time.
DefMemPerCPU=1024
SchedulerType=sched/backfill
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
# SIGKILL a cancelled job's processes 5 s after SIGTERM, not 30, so stop() is quick.
KillWait=5
SlurmctldTimeout=10
SlurmdTimeout=10
NodeName={self.host} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory} State=UNKNOWN
PartitionName={self.partition} Nodes={self.host} Default=YES MaxTime=INFINITE State=UP
""")

    def _spawn(self, name, args, **kwargs):
        # Foreground daemons (-F/-D), so the Popen pid is the daemon's and stop() can kill it.
        log = open(os.path.join(self.root, f"{name}.out"), "ab")
        try:
            self.procs[name] = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT,
                                                start_new_session=True, env=self.env, **kwargs)
        finally:
            log.close()

    def _start_munged(self):
        if not os.path.exists(MUNGE_KEY):
            subprocess.run(["mungekey", "-c"], check=True)
            shutil.chown(MUNGE_KEY, "munge", "munge")
        os.mkdir(self.munge_dir, 0o755)
        shutil.chown(self.munge_dir, "munge", "munge")
        d = self.munge_dir
        self._spawn("munged", ["munged", "-F", f"--socket={self.munge_socket}",
                               f"--pid-file={d}/munged.pid", f"--log-file={d}/munged.log",
                               f"--seed-file={d}/munged.seed"], user="munge", group="munge")
        self._wait(lambda: os.path.exists(self.munge_socket), 10, "munged's socket")

    def start(self):
        for d in ("state", "spool"):
            os.mkdir(os.path.join(self.root, d))
        try:
            self._start_munged()
            self._spawn("slurmctld", ["slurmctld", "-D", "-f", self.conf])
            self._spawn("slurmd", ["slurmd", "-D", "-f", self.conf])
            self._wait(lambda: self.node_state() == "idle", 30, "the node to be idle")
        except BaseException:
            self.stop()
            raise
        return self

    def node_state(self):
        r = subprocess.run(["sinfo", "-h", "-o", "%T"], env=self.env, capture_output=True, text=True)
        return r.stdout.strip() if r.returncode == 0 else None

    def _wait(self, predicate, timeout, what):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            dead = [f"{n} (exit {p.returncode})" for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise AssertionError(f"{', '.join(dead)} exited while waiting for {what}\n" + self.logs())
            time.sleep(0.2)
        raise AssertionError(f"timed out after {timeout}s waiting for {what}\n" + self.logs())

    def logs(self):
        """The tail of every daemon log, for failure messages."""
        paths = [os.path.join(self.munge_dir, "munged.log")]
        for name in ("munged", "slurmctld", "slurmd"):
            paths += [os.path.join(self.root, f"{name}.out"), os.path.join(self.root, f"{name}.log")]
        return "".join(f"--- {p}\n{tail(p)}" for p in paths if os.path.exists(p))

    def _job_sessions(self):
        """Sessions of this cluster's running jobs. slurmstepd daemonizes into its own session, so
        stopping slurmd leaves it and the job's processes running; it inherits slurmd's
        SLURM_CONF, which names this cluster's unique configuration file."""
        marker = f"SLURM_CONF={self.conf}".encode()
        sessions = set()
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() != "slurmstepd":
                        continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if marker in f.read().split(b"\0"):
                        sessions.add(os.getsid(int(pid)))
            except OSError:  # exited meanwhile
                pass
        return sessions

    def _kill_sessions(self, sessions):
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                if os.getsid(int(pid)) in sessions:
                    os.kill(int(pid), signal.SIGKILL)
            except OSError:
                pass

    def stop(self):
        # Cancel jobs while the daemons run, so jobs get SIGTERM and can clean up; then SIGKILL
        # whatever is left of them.
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            subprocess.run(["scancel", f"--partition={self.partition}"], env=self.env, capture_output=True)
            deadline = time.monotonic() + 8  # KillWait and some
            while self._job_sessions() and time.monotonic() < deadline:
                time.sleep(0.2)
        self._kill_sessions(self._job_sessions())
        # Slurm daemons before munged, which authenticates their shutdown messages.
        for name in reversed(list(self.procs)):
            proc = self.procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main():
    """Smoke test: start, run a batch job, cancel a long one, leave one running, stop."""
    t0 = time.monotonic()
    with SlurmCluster() as slurm:
        print(f"started in {time.monotonic() - t0:.1f}s (conf {slurm.conf})")

        def sbatch(*args):
            return subprocess.run(["sbatch", "--parsable", f"--chdir={slurm.root}", *args], env=slurm.env,
                                  check=True, capture_output=True, text=True).stdout.strip()

        def state(job):
            return subprocess.run(["squeue", "-h", "-j", job, "-o", "%T"], env=slurm.env,
                                  capture_output=True, text=True).stdout.strip()

        out = os.path.join(slurm.root, "job-output")
        script = os.path.join(slurm.root, "job.sh")
        with open(script, "w") as f:
            f.write(f"#!/bin/sh\necho hello > {out}.tmp && mv {out}.tmp {out}\n")
        t = time.monotonic()
        sbatch(script)
        slurm._wait(lambda: os.path.exists(out), 30, "the batch job's file")
        print(f"batch job wrote its file {time.monotonic() - t:.1f}s after sbatch")

        cancelled, left_running = sbatch("--wrap", "sleep 600"), sbatch("--wrap", "sleep 601")
        slurm._wait(lambda: state(cancelled) == state(left_running) == "RUNNING", 30, "the sleep jobs to run")
        t = time.monotonic()
        subprocess.run(["scancel", cancelled], env=slurm.env, check=True)
        slurm._wait(lambda: state(cancelled) == "", 30, "the cancelled job to leave squeue")
        print(f"cancelled job left squeue {time.monotonic() - t:.1f}s after scancel")
        marker = f"SLURM_CONF={slurm.conf}".encode()
        t = time.monotonic()
    print(f"stopped in {time.monotonic() - t:.1f}s")

    # Every process of the cluster and its jobs has the cluster's SLURM_CONF in its environment.
    left = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f, open(f"/proc/{pid}/cmdline", "rb") as g:
                if marker in f.read().split(b"\0"):
                    left.append(pid + " " + g.read().replace(b"\0", b" ").decode())
        except OSError:
            pass
    assert not left, f"processes left running: {left}"


if __name__ == "__main__":
    main()
