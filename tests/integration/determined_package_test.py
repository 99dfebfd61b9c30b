#!/usr/bin/env python3
"""The `determined` package (python/determined) without a cluster: a fake det master, made of
http.server, answers the REST routes det_core calls and records them, and the launchers and
DistributedContext run as real local processes."""

import http.server
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import unittest
from unittest import mock

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
PYTHONPATH = os.pathsep.join([os.path.join(ROOT, "python"), os.path.join(ROOT, "examples", "core-api")])
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path[:0] = PYTHONPATH.split(os.pathsep)

import determined as det  # noqa: E402
from determined import core  # noqa: E402

TOKEN = "allocation-secret"


class FakeMaster:
    """The Core API routes of det's master (master/http_gateway.cpp), recording each call as
    (method, path, body). The searcher hands out `operations` (lengths, in batches) one by one."""

    def __init__(self):
        self.calls = []
        self.operations = []
        self.preempt = False
        self.lock = threading.Lock()
        master = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # det_core keeps its connection alive

            def log_message(self, *args):
                pass

            def handle_one(self, method):
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length)) if length else None
                status, reply = master.answer(method, self.path, body, self.headers.get("Authorization"))
                data = json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):
                self.handle_one("GET")

            def do_POST(self):
                self.handle_one("POST")

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def answer(self, method, path, body, authorization):
        if authorization != "Bearer " + TOKEN:
            return 401, {"error": "no valid token"}
        with self.lock:
            self.calls.append((method, path, body))
            if method == "GET" and re.fullmatch(r"/api/v1/trials/\d+/searcher/operation", path):
                if not self.operations:
                    return 200, {"completed": True}
                return 200, {"length": self.operations[0], "unit": "LENGTH_UNIT_BATCHES"}
            if method == "POST" and re.fullmatch(r"/api/v1/trials/\d+/searcher/completed_operation", path):
                self.operations.pop(0)
                return 200, {"completed": True}
            if method == "GET" and re.fullmatch(r"/api/v1/allocations/\d+\.\d+/signals/preemption", path):
                return 200, {"preempt": self.preempt}
            if method == "POST" and re.fullmatch(r"/api/v1/trials/\d+/(metrics|checkpoints|progress|early_exit)", path):
                return 200, {}
        return 404, {"error": f"no route {method} {path}"}

    def posted(self, suffix):
        with self.lock:
            return [body for method, path, body in self.calls if method == "POST" and path.endswith(suffix)]

    def stop(self):
        self.server.shutdown()
        self.server.server_close()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def without_det_variables():
    return {k: v for k, v in os.environ.items() if not k.startswith("DET_")}


def python_env(extra=None):
    """The environment of a child process: this package and det_core importable."""
    env = dict(without_det_variables(), PYTHONPATH=PYTHONPATH, PYTHONDONTWRITEBYTECODE="1")
    env.update(extra or {})
    return env


class PackageTest(unittest.TestCase):
    def setUp(self):
        self.master = FakeMaster()
        self.addCleanup(self.master.stop)
        self.storage = tempfile.TemporaryDirectory()
        self.addCleanup(self.storage.cleanup)
        self.trial_env = {
            "DET_MASTER": self.master.url,
            "DET_TRIAL_ID": "7",
            "DET_EXPERIMENT_ID": "3",
            "DET_ALLOCATION_ID": "7.2",
            "DET_ALLOCATION_TOKEN": TOKEN,
            "DET_HPARAMS": json.dumps({"lr": 0.1}),
            "DET_TRIAL_SEED": "42",
            "DET_CHECKPOINT_DIR": self.storage.name,
            "DET_SLOT_IDS": "0",
            "DET_AGENT_ID": "agent-1",
        }
        # det_core.Context() takes SIGTERM over; the test process gets its own handler back.
        self.addCleanup(signal.signal, signal.SIGTERM, signal.getsignal(signal.SIGTERM))

    def on_det(self, **extra):
        """os.environ as det gives it to a trial's process, while the `with` block lasts."""
        return mock.patch.dict(os.environ, dict(self.trial_env, **extra), clear=True)

    def run_python(self, args, env, timeout=60):
        return subprocess.run([sys.executable, *args], env=python_env(env), capture_output=True,
                              text=True, timeout=timeout, cwd=self.storage.name)

    def test_cluster_info_is_none_off_det_and_filled_on_det(self):
        with mock.patch.dict(os.environ, without_det_variables(), clear=True):
            self.assertIsNone(det.get_cluster_info())
        latest = os.path.join(self.storage.name, "0b4c1e7e-0000-4000-8000-000000000001")
        with self.on_det(DET_SLOT_IDS="2,3", DET_LATEST_CHECKPOINT=latest):
            info = det.get_cluster_info()
        self.assertEqual(info.master_url, self.master.url)
        self.assertEqual(info.task_type, "TRIAL")
        self.assertEqual(info.allocation_id, "7.2")
        self.assertEqual(info.session_token, TOKEN)
        self.assertEqual(info.agent_id, "agent-1")
        self.assertEqual(info.slot_ids, [2, 3])
        self.assertEqual(info.container_addrs, ["127.0.0.1"])
        self.assertEqual(info.container_rank, 0)
        self.assertEqual(info.latest_checkpoint, os.path.basename(latest))
        self.assertEqual(info.user_data, {})
        self.assertEqual((info.trial.trial_id, info.trial.experiment_id, info.trial.trial_seed), (7, 3, 42))
        self.assertEqual(info.trial.hparams, {"lr": 0.1})
        self.assertEqual(info.trial.config, {})
        self.assertEqual(info.trial._trial_run_id, 2)
        self.assertEqual(det.LOG_FORMAT, "%(levelname)s: [%(process)s] %(name)s: %(message)s")

    def test_the_experiment_config_and_steps_completed_reach_cluster_info(self):
        config = {"searcher": {"name": "single", "metric": "x", "max_length": {"epochs": 3}},
                  "data": {"url": "file:///d"}, "records_per_epoch": 600}
        with self.on_det(DET_EXPERIMENT_CONFIG=json.dumps(config), DET_STEPS_COMPLETED="40"):
            info = det.get_cluster_info()
        self.assertEqual(info.trial._config, config)
        self.assertEqual(info.trial.config["records_per_epoch"], 600)
        self.assertEqual(info.user_data, {"url": "file:///d"})
        self.assertEqual(info.trial._steps_completed, 40)

    def test_searcher_operations_are_one_made_from_max_length_as_in_determined_0_38(self):
        config = {"searcher": {"name": "single", "metric": "x", "max_length": {"batches": 50}}}
        with self.on_det(DET_EXPERIMENT_CONFIG=json.dumps(config)), core.init() as core_context:
            self.assertEqual(core_context.searcher.get_configured_units(), core.Unit.BATCHES)
            with self.assertWarns(FutureWarning):
                ops = list(self._complete_each(core_context))
        self.assertEqual([op.length for op in ops], [50])
        self.assertEqual(self.master.posted("/progress"), [{"progress": 0.5}])
        # The master is not asked: the operation comes from the config, completing it posts nothing.
        self.assertEqual(self.master.posted("/searcher/completed_operation"), [])

        unitless = {"searcher": {"name": "random", "metric": "x", "max_length": 100}}
        with self.on_det(DET_EXPERIMENT_CONFIG=json.dumps(unitless)), core.init() as core_context:
            self.assertIsNone(core_context.searcher.get_configured_units())
            self.assertEqual([op.length for op in self._complete_each(core_context)], [100])

        without_length = {"searcher": {"name": "single", "metric": "x"}}
        with self.on_det(DET_EXPERIMENT_CONFIG=json.dumps(without_length)), core.init() as core_context:
            self.assertIsNone(core_context.searcher.get_configured_units())
            op = next(core_context.searcher.operations())
            self.assertIsNone(op.length)
            with self.assertRaisesRegex(RuntimeError, "no length"):
                op.report_progress(10)
            op.report_completed(0.5)

    def _complete_each(self, core_context):
        for op in core_context.searcher.operations():
            op.report_progress(op.length / 2)
            op.report_completed(0.1)
            yield op

    def test_metrics_progress_and_early_exit_reach_the_trial_routes(self):
        with self.on_det(), core.init() as core_context:
            self.assertEqual(core_context.distributed.size, 1)
            self.assertEqual(core_context.info.trial.trial_id, 7)
            with self.assertLogs("determined.core", "WARNING") as logs:
                core_context.train.report_training_metrics(10, {"loss": 0.5}, batch_metrics=[{"loss": 0.6}])
                core_context.train.report_validation_metrics(10, {"validation_loss": 0.25, "note": "text"})
            self.assertEqual(len(logs.records), 2)  # batch_metrics are not kept; "note" is no number
            core_context.train.report_metrics("inference", 12, {"latency": 3})
            core_context.train.report_progress(0.5)
            with self.assertRaises(ValueError):
                core_context.train.report_progress(1.5)
            with self.assertRaises(RuntimeError):
                core_context.train.report_validation_metrics(11, {"validation_loss": None})
            core_context.train.report_early_exit(core.EarlyExitReason.USER_REQUESTED_STOP)
            path = core_context.train.get_tensorboard_path()
        self.assertEqual(str(path), os.path.join(self.storage.name, "tensorboard/experiment/3/trial/7"))
        self.assertTrue(path.is_dir())
        metric_calls = [(m, p) for m, p, _ in self.master.calls if p.endswith("/metrics")]
        self.assertEqual(metric_calls, [("POST", "/api/v1/trials/7/metrics")] * 3)
        self.assertEqual(self.master.posted("/metrics"), [
            {"group": "training", "total_batches": 10, "total_records": 0, "total_epochs": 0.0,
             "metrics": {"loss": 0.5, "batches": 10}},
            {"group": "validation", "total_batches": 10, "total_records": 0, "total_epochs": 0.0,
             "metrics": {"validation_loss": 0.25, "batches": 10}},
            {"group": "inference", "total_batches": 12, "total_records": 0, "total_epochs": 0.0,
             "metrics": {"latency": 3.0, "batches": 12}},
        ])
        self.assertEqual(self.master.posted("/api/v1/trials/7/progress"), [{"progress": 0.5}])
        self.assertEqual(self.master.posted("/api/v1/trials/7/early_exit"), [{"reason": "USER_CANCELED"}])

    def test_invalid_hp_in_the_block_reports_an_early_exit_and_exits_zero(self):
        with self.on_det(), self.assertRaises(SystemExit) as exited:
            with core.init():
                raise det.InvalidHP("lr too large")
        self.assertEqual(exited.exception.code, 0)
        self.assertEqual(self.master.posted("/early_exit"), [{"reason": "INVALID_HP"}])

    def test_searcher_operations_follow_the_master(self):
        self.master.operations = [10, 20]
        lengths = []
        with self.on_det(), core.init() as core_context:
            self.assertEqual(core_context.searcher.get_configured_units(), core.Unit.BATCHES)
            for op in core_context.searcher.operations():
                lengths.append(op.length)
                op.report_progress(op.length / 2)
                core_context.train.report_validation_metrics(op.length, {"validation_loss": 1 / op.length})
                op.report_completed(1 / op.length)
                with self.assertRaises(RuntimeError):
                    op.report_completed(0.0)
            self.assertIsNone(core_context.searcher.get_configured_units())
        self.assertEqual(lengths, [10, 20])
        self.assertEqual(self.master.posted("/searcher/completed_operation"),
                         [{"length": 10, "searcher_metric": 0.1}, {"length": 20, "searcher_metric": 0.05}])
        self.assertEqual(self.master.posted("/progress"), [{"progress": 0.5}, {"progress": 0.5}])

        self.master.operations = [5]
        with self.on_det(), core.init() as core_context, self.assertRaises(RuntimeError):
            for _ in core_context.searcher.operations():
                pass  # never completed: Determined refuses to hand out the next one

    def test_preemption_comes_from_the_master(self):
        with self.on_det(), core.init() as core_context:
            self.assertFalse(core_context.preempt.should_preempt())
            self.master.preempt = True
            time.sleep(1.1)  # det_core asks the master at most once a second
            self.assertTrue(core_context.preempt.should_preempt())
            core_context.preempt.acknowledge_preemption_signal()
        self.assertIn(("GET", "/api/v1/allocations/7.2/signals/preemption", None), self.master.calls)

    def test_checkpoints_store_restore_upload_and_download(self):
        with self.on_det(), core.init() as core_context:
            ckpt = core_context.checkpoint
            with ckpt.store_path({"steps_completed": 5, "framework": "none"}) as (path, storage_id):
                os.makedirs(path / "model")
                (path / "model" / "weights.txt").write_text("w=1")
            with ckpt.restore_path(storage_id) as restored:
                self.assertEqual((restored / "model" / "weights.txt").read_text(), "w=1")
            self.assertEqual(str(restored), os.path.join(self.storage.name, storage_id))
            metadata = ckpt.get_metadata(storage_id)
            self.assertEqual((metadata["steps_completed"], metadata["framework"]), (5, "none"))

            with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as target:
                for name in ("a.bin", "skip.tmp"):
                    with open(os.path.join(source, name), "w") as f:
                        f.write(name)
                uploaded = ckpt.upload(source, {"steps_completed": 6}, selector=lambda p: not p.endswith(".tmp"))
                ckpt.download(uploaded, target)
                self.assertEqual(sorted(os.listdir(target)), ["a.bin", "metadata.json"])

            with self.assertRaises(ValueError):
                with ckpt.store_path({"framework": "none"}):
                    pass
            with self.assertRaises(FileNotFoundError):
                with ckpt.restore_path("no-such-checkpoint"):
                    pass
            with self.assertRaisesRegex(NotImplementedError, "det checkpoint delete"):
                ckpt.delete(storage_id)
        reported = self.master.posted("/api/v1/trials/7/checkpoints")
        self.assertEqual([(c["uuid"], c["steps_completed"]) for c in reported], [(storage_id, 5), (uploaded, 6)])
        self.assertEqual(sorted(reported[0]["resources"]), ["metadata.json", "model/weights.txt"])
        self.assertEqual(sorted(reported[1]["resources"]), ["a.bin", "metadata.json"])

    def test_a_warm_start_checkpoint_outside_the_storage_restores_by_its_uuid(self):
        with tempfile.TemporaryDirectory() as other:
            source = os.path.join(other, "5d6f0a3c-1111-4000-8000-000000000002")
            os.makedirs(source)
            with open(os.path.join(source, "state.json"), "w") as f:
                f.write("{}")
            with self.on_det(DET_LATEST_CHECKPOINT=source, DET_WARM_START="1"), core.init() as core_context:
                with core_context.checkpoint.restore_path(core_context.info.latest_checkpoint) as path:
                    self.assertTrue((path / "state.json").exists())

    def test_off_det_init_logs_reports_and_keeps_checkpoints_locally(self):
        with mock.patch.dict(os.environ, without_det_variables(), clear=True):
            with core.init(checkpoint_storage=self.storage.name) as core_context:
                self.assertIsNone(core_context.info)
                core_context.train.report_training_metrics(1, {"loss": 1.0})
                self.assertEqual([op.length for op in self._completed_ops(core_context)], [1])
                self.assertFalse(core_context.preempt.should_preempt())
                with core_context.checkpoint.store_path({"steps_completed": 1}) as (path, storage_id):
                    (path / "f").write_text("x")
                with core_context.checkpoint.restore_path(storage_id) as path:
                    self.assertEqual((path / "f").read_text(), "x")
        self.assertEqual(self.master.calls, [])

    @staticmethod
    def _completed_ops(core_context):
        for op in core_context.searcher.operations():
            op.report_completed(0.0)
            yield op

    def test_two_processes_gather_allgather_and_broadcast_over_tcp(self):
        program = textwrap.dedent("""
            import json, sys
            from determined import core
            rank, port = int(sys.argv[1]), int(sys.argv[2])
            d = core.DistributedContext(rank=rank, size=2, local_rank=rank, local_size=2,
                                        cross_rank=0, cross_size=1, pub_port=port)
            out = {
                "allgather": d.allgather({"rank": rank}),
                "gather": d.gather(rank * 10),
                "broadcast": d.broadcast("from chief" if rank == 0 else None),
                "allgather_local": d.allgather_local(rank),
                "gather_local": d.gather_local(rank + 100),
                "broadcast_local": d.broadcast_local([1, 2] if rank == 0 else None),
                "big": len(d.broadcast(b"x" * 5_000_000 if rank == 0 else None)),
            }
            d.close()
            print(json.dumps(out))
        """)
        port = free_port()
        procs = [subprocess.Popen([sys.executable, "-c", program, str(rank), str(port)], env=python_env(),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for rank in (1, 0)]
        results = {}
        for rank, proc in zip((1, 0), procs):
            out, err = proc.communicate(timeout=60)
            self.assertEqual(proc.returncode, 0, err)
            results[rank] = json.loads(out)
        for rank in (0, 1):
            self.assertEqual(results[rank]["allgather"], [{"rank": 0}, {"rank": 1}])
            self.assertEqual(results[rank]["broadcast"], "from chief")
            self.assertEqual(results[rank]["allgather_local"], [0, 1])
            self.assertEqual(results[rank]["broadcast_local"], [1, 2])
            self.assertEqual(results[rank]["big"], 5_000_000)
        self.assertEqual((results[0]["gather"], results[1]["gather"]), ([0, 10], None))
        self.assertEqual((results[0]["gather_local"], results[1]["gather_local"]), ([100, 101], None))

    def test_wrap_rank_labels_each_line_and_keeps_the_exit_code(self):
        child = "import sys; print('one'); print('two', file=sys.stderr); sys.stdout.write('3%\\r4%'); sys.exit(4)"
        out = self.run_python(["-m", "determined.launch.wrap_rank", "5", "--", sys.executable, "-c", child], {})
        self.assertEqual(out.returncode, 4, out.stderr)
        self.assertEqual(out.stdout, "[rank=5] one\n[rank=5] 3%\n[rank=5] 4%\n")
        self.assertEqual(out.stderr, "[rank=5] two\n")
        by_variable = self.run_python(["-m", "determined.launch.wrap_rank", "NOPE,MY_RANK", sys.executable, "-c",
                                       "print('hi')"], {"MY_RANK": "3"})
        self.assertEqual((by_variable.returncode, by_variable.stdout), (0, "[rank=3] hi\n"))

    def write_script(self, text):
        path = os.path.join(self.storage.name, "train.py")
        with open(path, "w") as f:
            f.write(textwrap.dedent(text))
        return path

    def test_torch_distributed_launches_a_core_api_trial_on_two_slots(self):
        script = self.write_script("""
            import os
            import determined as det
            from determined import core
            distributed = core.DistributedContext.from_torch_distributed()
            with core.init(distributed=distributed) as core_context:
                rank = core_context.distributed.rank
                print("ranks", core_context.distributed.allgather(rank), os.environ["LOCAL_RANK"],
                      os.environ["WORLD_SIZE"], os.environ["MASTER_ADDR"])
                for op in core_context.searcher.operations():
                    if rank == 0:
                        core_context.train.report_validation_metrics(op.length, {"validation_loss": 0.5})
                        op.report_completed(0.5)
                    else:
                        try:
                            op.report_completed(0.5)
                        except RuntimeError as e:
                            print("refused:", e)
                    with core_context.checkpoint.store_path({"steps_completed": op.length, "shards": {str(rank): True}},
                                                            shard=True) as (path, storage_id):
                        (path / f"rank{rank}.txt").write_text(str(rank))
                    print("checkpoint", storage_id)
                    if core_context.preempt.should_preempt():
                        break
        """)
        self.master.operations = [4]
        env = dict(self.trial_env, DET_SLOT_IDS="0,1")
        out = self.run_python(["-m", "determined.launch.torch_distributed", "--", sys.executable, script], env)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("[rank=0] ranks [0, 1] 0 2 127.0.0.1", lines)
        self.assertIn("[rank=1] ranks [0, 1] 1 2 127.0.0.1", lines)
        self.assertTrue(any(l.startswith("[rank=1] refused: you must only call op.report_completed()") for l in lines))
        ids = {l.split()[-1] for l in lines if " checkpoint " in l}
        self.assertEqual(len(ids), 1, lines)  # both ranks wrote into one checkpoint
        reported = self.master.posted("/api/v1/trials/7/checkpoints")
        self.assertEqual(len(reported), 1)
        self.assertEqual(sorted(reported[0]["resources"]), ["metadata.json", "rank0.txt", "rank1.txt"])
        self.assertEqual(reported[0]["uuid"], ids.pop())
        self.assertEqual(self.master.posted("/searcher/completed_operation"), [{"length": 4, "searcher_metric": 0.5}])
        with open(os.path.join(self.storage.name, reported[0]["uuid"], "metadata.json")) as f:
            self.assertEqual(json.load(f)["shards"], {"0": True, "1": True})

    def test_torch_distributed_spans_containers_named_by_det(self):
        script = self.write_script("""
            from determined import core
            d = core.DistributedContext.from_torch_distributed()
            print(d.rank, d.cross_rank, d.allgather(d.rank), d.allgather_local(d.rank),
                  d.broadcast_local(d.rank if d.local_rank == 0 else None))
            d.close()
        """)
        # Two containers of two slots each, both on this machine: their chief's address first.
        shared = {"DET_SLOT_IDS": "0,1", "DET_CONTAINER_ADDRS": "127.0.0.1,127.0.0.1",
                  "C10D_PORT": str(free_port()), "INTER_TRAIN_PROCESS_COMM_PORT_1": str(free_port())}
        launchers = [subprocess.Popen([sys.executable, "-m", "determined.launch.torch_distributed", sys.executable, script],
                                      env=python_env(dict(shared, DET_CONTAINER_RANK=str(c))), stdout=subprocess.PIPE,
                                      text=True) for c in (0, 1)]
        lines = []
        for launcher in launchers:
            out, _ = launcher.communicate(timeout=60)
            self.assertEqual(launcher.returncode, 0)
            lines += out.splitlines()
        self.assertEqual(sorted(lines), [
            "[rank=0] 0 0 [0, 1, 2, 3] [0, 1] 0",
            "[rank=1] 1 0 [0, 1, 2, 3] [0, 1] 0",
            "[rank=2] 2 1 [0, 1, 2, 3] [2, 3] 2",
            "[rank=3] 3 1 [0, 1, 2, 3] [2, 3] 2",
        ])

    def test_torch_distributed_exits_with_the_first_failure_and_stops_the_others(self):
        script = self.write_script("""
            import os, sys, time
            if os.environ["RANK"] == "1":
                sys.exit(3)
            time.sleep(120)
        """)
        started = time.monotonic()
        out = self.run_python(["-m", "determined.launch.torch_distributed", sys.executable, script],
                              {"DET_SLOT_IDS": "0,1"})
        self.assertEqual(out.returncode, 3, out.stderr)
        self.assertLess(time.monotonic() - started, 30)

    def test_torch_distributed_passes_sigterm_on_to_every_rank(self):
        script = self.write_script("""
            import signal, sys, time
            stopped = []
            signal.signal(signal.SIGTERM, lambda *_: stopped.append(True))
            print("ready")
            while not stopped:
                time.sleep(0.05)
            print("stopping")
        """)
        launcher = subprocess.Popen([sys.executable, "-m", "determined.launch.torch_distributed", sys.executable, script],
                                    env=python_env({"DET_SLOT_IDS": "0,1"}), stdout=subprocess.PIPE, text=True)
        ready = set()
        while len(ready) < 2:
            line = launcher.stdout.readline()
            self.assertTrue(line, "the launcher ended before its ranks were ready")
            ready.add(line.split()[0])
        launcher.send_signal(signal.SIGTERM)
        rest, _ = launcher.communicate(timeout=30)
        self.assertEqual(launcher.returncode, 0)
        self.assertEqual(sorted(rest.splitlines()), ["[rank=0] stopping", "[rank=1] stopping"])

    def test_torch_distributed_refuses_torch_overrides(self):
        out = self.run_python(["-m", "determined.launch.torch_distributed", "--nproc_per_node", "2", "--",
                               sys.executable, "-c", "pass"], {})
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("overrides (--nproc_per_node 2) do not apply", out.stderr)


if __name__ == "__main__":
    unittest.main()
