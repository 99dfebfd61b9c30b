"""det_core: det's Core API for any training process, with Python's standard library only.

A trial whose entrypoint is a command (`entrypoint = "python3 train.py"`) runs it in a copy of
the directory submitted with the experiment (`det submit CONFIG DIR`). The process learns what to
do from its environment (DET_HPARAMS, DET_LATEST_CHECKPOINT, ...) and reports to the master's
REST API with the token of its run:

    ctx = det_core.Context()
    for op in ctx.searcher_operations():      # train until op.length, validate, report
        ...
        ctx.report_validation_metrics(steps, {"validation_loss": loss})
        if ctx.should_preempt():              # the searcher or a user stopped the trial
            save a checkpoint and return
    with ctx.checkpoint(steps) as path:       # files written under path become a checkpoint
        ...
"""

import contextlib
import json
import os
import shutil
import signal
import ssl
import time
import http.client
import urllib.parse
import uuid


class DetError(RuntimeError):
    """The master refused a call; the message says why."""


class SearcherOperation:
    """Train until the trial's total length reaches `length` (in `unit`), then validate. A search
    without a length (Determined 0.38's single, random or grid with no max_length) gives one
    operation whose length is None: the process trains as long as it decides, then exits."""

    def __init__(self, context, length, unit):
        self._context = context
        self.length = length
        self.unit = unit

    def report_progress(self, length_trained):
        """How far through the operation the trial is, for the master's view of the search."""
        if self.length is None:
            raise RuntimeError("this operation has no length to measure progress against; report the share "
                               "trained (0 to 1) with report_progress() of the context instead")
        self._context.report_progress(min(max(length_trained / self.length, 0.0), 1.0))

    def report_completed(self, searcher_metric):
        """After reporting validation metrics at `length`: the operation is done."""
        if self.length is None:
            return  # nothing to check: the search reads its metric from the validations
        self._context._call("POST", f"/api/v1/trials/{self._context.trial_id}/searcher/completed_operation",
                            {"length": self.length, "searcher_metric": searcher_metric})


class Context:
    def __init__(self, poll_interval=1.0):
        env = os.environ
        self.master = env["DET_MASTER"].rstrip("/")
        self.trial_id = int(env["DET_TRIAL_ID"])
        self.experiment_id = int(env["DET_EXPERIMENT_ID"])
        self.allocation_id = env["DET_ALLOCATION_ID"]
        self.hparams = json.loads(env.get("DET_HPARAMS") or "{}")
        self.seed = int(env.get("DET_TRIAL_SEED", "0"))
        self.checkpoint_dir = env["DET_CHECKPOINT_DIR"]
        # The checkpoint to continue from (or, with warm_start, whose weights to start from).
        self.latest_checkpoint = env.get("DET_LATEST_CHECKPOINT") or None
        self.warm_start = env.get("DET_WARM_START") == "1"
        self._token = env["DET_ALLOCATION_TOKEN"]
        # One kept-alive connection: a report costs one round trip, not a TCP (and TLS) handshake too.
        # A master that serves HTTPS is checked against the CA its agent was given.
        self._address = urllib.parse.urlsplit(self.master)
        self._tls = (ssl.create_default_context(cafile=env.get("DET_MASTER_CERT_FILE") or None)
                     if self._address.scheme == "https" else None)
        self._connection = None
        self._reconnect_wait = float(env.get("DET_RECONNECT_WAIT", "0"))
        self._poll_interval = poll_interval
        self._polled_at = 0.0
        self._preempt = False
        # The agent stops a run with SIGTERM: remember it rather than die mid-step.
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _on_sigterm(self, signum, frame):
        self._preempt = True

    def close(self):
        """Closes the kept-alive connection to the master; a later call opens a new one."""
        if self._connection:
            self._connection.close()
            self._connection = None

    def _connect(self):
        host, port = self._address.hostname, self._address.port
        if self._tls:
            return http.client.HTTPSConnection(host, port, timeout=60, context=self._tls)
        return http.client.HTTPConnection(host, port, timeout=60)

    def _call(self, method, path, body=None):
        """One REST call. While the master restarts (it is unreachable, or has not restored this
        trial yet) calls are retried for up to DET_RECONNECT_WAIT seconds."""
        data = None if body is None else json.dumps(body).encode()
        headers = {"Authorization": "Bearer " + self._token, "Content-Type": "application/json"}
        deadline = time.monotonic() + self._reconnect_wait
        while True:
            reused = self._connection is not None
            try:
                if not reused:
                    self._connection = self._connect()
                self._connection.request(method, path, body=data, headers=headers)
                reply = self._connection.getresponse()
                payload = reply.read()
            except (OSError, http.client.HTTPException) as e:
                if self._connection:
                    self._connection.close()
                self._connection = None
                if reused and isinstance(e, (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError)):
                    continue  # the master closed a kept-alive connection: one new one at once
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)
                continue
            if reply.status < 400:
                return json.loads(payload or b"{}")
            try:
                message = json.loads(payload).get("error", f"HTTP {reply.status}")
            except ValueError:
                message = f"HTTP {reply.status}"
            if reply.status not in (404, 500, 503, 504) or time.monotonic() >= deadline:
                raise DetError(message) from None
            time.sleep(0.5)

    def report_metrics(self, group, steps_completed, metrics, records=0, epochs=0.0):
        """Numeric metrics of any group; "training" and "validation" are the trial's own series."""
        self._call("POST", f"/api/v1/trials/{self.trial_id}/metrics", {
            "group": group, "total_batches": steps_completed, "total_records": records,
            "total_epochs": epochs, "metrics": dict(metrics, batches=steps_completed)})

    def report_training_metrics(self, steps_completed, metrics, records=0, epochs=0.0):
        self.report_metrics("training", steps_completed, metrics, records, epochs)

    def report_validation_metrics(self, steps_completed, metrics, records=0, epochs=0.0):
        """The searcher reads its metric from these."""
        self.report_metrics("validation", steps_completed, metrics, records, epochs)

    def report_progress(self, progress):
        """The share (0 to 1) of the trial's training done, for the web UI and its search's progress."""
        self._call("POST", f"/api/v1/trials/{self.trial_id}/progress", {"progress": progress})

    def searcher_operations(self):
        """Yields what to train to next until the searcher has nothing more for this run."""
        while True:
            op = self._call("GET", f"/api/v1/trials/{self.trial_id}/searcher/operation")
            if op.get("completed"):
                return
            if op.get("no_length"):  # train until done, then exit
                yield SearcherOperation(self, None, None)
                return
            unit = op.get("unit", "LENGTH_UNIT_BATCHES").replace("LENGTH_UNIT_", "").lower()
            yield SearcherOperation(self, int(op.get("length", 0)), unit)

    def should_preempt(self):
        """True once the trial must checkpoint and exit (asked at most every poll_interval)."""
        if self._preempt:
            return True
        now = time.monotonic()
        if now - self._polled_at >= self._poll_interval:
            self._polled_at = now
            reply = self._call("GET", f"/api/v1/allocations/{self.allocation_id}/signals/preemption")
            self._preempt = bool(reply.get("preempt"))
        return self._preempt

    @contextlib.contextmanager
    def checkpoint(self, steps_completed, records=0, epochs=0.0, metadata=None, checkpoint_uuid=None):
        """Yields a directory to write the checkpoint's files into; on leaving the block they
        become checkpoint <uuid> under DET_CHECKPOINT_DIR and the master records it. `metadata`
        (JSON) joins det's own fields in its metadata.json; `checkpoint_uuid` names it in advance
        (a new uuid by default), for callers that share the name before writing."""
        checkpoint_uuid = checkpoint_uuid or str(uuid.uuid4())
        partial = os.path.join(self.checkpoint_dir, checkpoint_uuid + ".partial")
        os.makedirs(partial)
        try:
            yield partial
            with open(os.path.join(partial, "metadata.json"), "w") as f:
                json.dump({"uuid": checkpoint_uuid, "format": "core-api", "batches": steps_completed,
                           "records": records, "epochs": epochs, **(metadata or {})}, f)
            resources = {}
            for folder, _, files in os.walk(partial):
                for name in files:
                    path = os.path.join(folder, name)
                    resources[os.path.relpath(path, partial)] = os.path.getsize(path)
            os.rename(partial, os.path.join(self.checkpoint_dir, checkpoint_uuid))
        except BaseException:
            shutil.rmtree(partial, ignore_errors=True)
            raise
        final = os.path.join(self.checkpoint_dir, checkpoint_uuid)
        try:
            self._call("POST", f"/api/v1/trials/{self.trial_id}/checkpoints", {
                "uuid": checkpoint_uuid, "steps_completed": steps_completed, "total_records": records,
                "total_epochs": epochs, "resources": resources})
        except BaseException:
            shutil.rmtree(final, ignore_errors=True)  # unrecorded, it would never be collected
            raise
        self.latest_checkpoint = final

    def alert(self, title, description, level):
        """An alert (level debug, info, warn or error) the master writes into the trial's logs,
        in the stream "alert"; det has no webhooks to send it to."""
        self._call("POST", f"/api/v1/trials/{self.trial_id}/alerts",
                   {"title": title, "description": description, "level": level})

    def report_early_exit(self, reason="INVALID_HP"):
        """INVALID_HP: the searcher replaces the trial instead of counting it."""
        self._call("POST", f"/api/v1/trials/{self.trial_id}/early_exit", {"reason": reason})
