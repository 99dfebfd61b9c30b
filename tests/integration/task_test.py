#!/usr/bin/env python3
"""Tasks on a real cluster (one agent, cpu:2). Commands: det cmd run shows a command's output and
exit, uploads a context, holds slots a trial waits for until the command is killed, survives a
master kill -9, refuses bad configs with file, line and key, and only its owner or an admin kills
it. Notebooks: Debian's Jupyter reached through the master's proxy (its API, a kernel executing
code over its WebSocket channel), rights, idle timeouts, and a master kill -9."""

import os
import signal
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import uuid
import json

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, simulated_config, wait_for  # noqa: E402
from websocket import WebSocket  # noqa: E402


def command_of(c, task_id):
    return c.get(f"/api/v1/commands/{task_id}")["command"]


def wait_state(c, task_id, state, timeout=60):
    return wait_for(lambda: (lambda t: t if t["state"] == state else None)(command_of(c, task_id)), timeout,
                    f"command {task_id} to be {state}")


def launched_id(out):
    """The id `det cmd run -d` prints."""
    return out.stdout.strip().splitlines()[-1]


def proxied(c, path, token="admin", method="GET", body=None):
    """(status, JSON or text) of a request to a task's service on the master's proxy listener: with
    the grant of a ticket the user whose `token` is given asks for, or with nothing of det's (None:
    the path's own ?token= at most)."""
    task_id = path.split("/")[2]
    token = c.token if token == "admin" else token
    try:
        opener = c.proxy_opener() if token is None else c.proxy_session(task_id, token)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(c.proxy_origin(task_id) + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    try:
        with opener.open(req, timeout=30) as r:
            text = r.read().decode()
            return r.status, (json.loads(text) if text.startswith(("{", "[")) else text)
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def start_notebook(c, *args):
    """(id, token) of a notebook started with det notebook start, once it answers."""
    out = c.det("notebook", "start", *args, timeout=180)
    assert out.returncode == 0, out.stderr + c.log("agent-0")
    url = out.stdout.strip().splitlines()[-1]  # on the proxy's origin, with the notebook's own token
    path = "/proxy/" + url.split("/proxy/")[1]
    assert url.startswith(c.proxy_origin(path.split("/")[2])), url
    task_id = path.split("/")[2]
    return task_id, path.split("?token=")[1]


def execute(c, task_id, token, code):
    """What a new kernel of the notebook prints for `code`, over its WebSocket channel through the proxy."""
    status, kernel = proxied(c, f"/proxy/{task_id}/api/kernels?token={token}", method="POST", body={})
    assert status == 201, (status, kernel)
    ws = WebSocket(c.proxy_origin(task_id).replace("http", "ws", 1) +
                   f"/proxy/{task_id}/api/kernels/{kernel['id']}/channels?token={token}")
    msg_id = uuid.uuid4().hex
    ws.send_text(json.dumps({
        "header": {"msg_id": msg_id, "username": "test", "session": uuid.uuid4().hex, "msg_type": "execute_request",
                   "version": "5.3", "date": ""},
        "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
        "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                    "allow_stdin": False, "stop_on_error": True}}))
    printed = ""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        opcode, payload = ws.recv()
        if opcode != 1:
            continue
        msg = json.loads(payload)
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed += msg["content"]["text"]
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    ws.close()
    return printed


FAKE_TENSORBOARD = os.path.join(os.path.dirname(__file__), "..", "data", "programs", "fake_tensorboard.py")


class CommandTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.cluster = Cluster(agents=1, slots="cpu:2", agent_args=[f"--tensorboard={os.path.abspath(FAKE_TENSORBOARD)}"],
                              master_config="[resource_manager]\nagent_reconnect_wait = 20\n").start()
        wait_for(lambda: len(cls.cluster.connected_agents()) == 1, 30, "the agent to register")

    @classmethod
    def tearDownClass(cls):
        cls.cluster.stop()

    def test_1_output_and_exit_code(self):
        c = self.cluster
        out = c.det("cmd", "run", "--", "sh", "-c", 'echo hi; echo "slots=[$CUDA_VISIBLE_DEVICES]"; echo task=$DET_TASK_ID')
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertIn("hi", lines)
        self.assertIn("slots=[]", lines)  # CPU slots: no GPU is visible
        task_id = [l for l in lines if l.startswith("task=")][0][5:]
        command = command_of(c, task_id)
        self.assertEqual(command["state"], "TASK_STATE_TERMINATED")
        self.assertEqual(command["exit_code"], 0)
        self.assertEqual(command["entrypoint"][0], "sh")

        failed = c.det("cmd", "run", "sh", "-c", "echo failing >&2; exit 3")
        self.assertEqual(failed.returncode, 3)
        self.assertIn("failing", failed.stderr)
        self.assertIn("exited with code 3", failed.stderr)
        missing = c.det("cmd", "run", "--", "no-such-program-here")
        self.assertEqual(missing.returncode, 1)
        self.assertIn("no-such-program-here", missing.stderr)

    def test_2_context_config_and_environment(self):
        c = self.cluster
        context = tempfile.mkdtemp(dir=c.root)
        with open(os.path.join(context, "data.txt"), "w") as f:
            f.write("from the context\n")
        config = os.path.join(c.root, "command.toml")
        with open(config, "w") as f:
            f.write('description = "reads its context"\n'
                    'entrypoint = "cat data.txt; echo greeting=$GREETING; echo slot_ids=$DET_SLOT_IDS"\n'
                    '[resources]\nslots = 1\n'
                    '[environment]\nenvironment_variables = ["GREETING=hello there"]\n')
        out = c.det("cmd", "run", "--config-file", config, "--context", context)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("from the context", out.stdout)
        self.assertIn("greeting=hello there", out.stdout)
        slot_line = [l for l in out.stdout.splitlines() if l.startswith("slot_ids=")][0]
        self.assertIn(slot_line, ("slot_ids=0", "slot_ids=1"))
        listed = c.det("cmd", "list", "--json")
        self.assertIn("reads its context", listed.stdout)

    def test_2b_a_command_acts_for_its_owner_until_it_ends(self):
        c = self.cluster
        me = ("import json, os, urllib.request\n"
              "ask = urllib.request.Request(os.environ['DET_MASTER'] + '/api/v1/me',\n"
              "                             headers={'Authorization': 'Bearer ' + os.environ['DET_USER_TOKEN']})\n"
              "user = json.load(urllib.request.urlopen(ask))['user']['username']\n"
              "print('me=' + user, 'DET_USER=' + os.environ['DET_USER'], 'task=' + os.environ['DET_TASK_ID'])\n")
        out = c.det("cmd", "run", "--", "/usr/bin/python3", "-c", me)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        line = [l for l in out.stdout.splitlines() if l.startswith("me=")][0].split()
        self.assertEqual(line[:2], ["me=admin", "DET_USER=admin"])
        task_id = line[2][len("task="):]
        # The token is its owner's, named after the command, and revoked once the command ended.
        def its_token():
            return [t for t in c.get("/api/v1/tokens")["tokens"] if t["description"] == f"the token of task {task_id}"]
        self.assertEqual(len(its_token()), 1)
        self.assertEqual(its_token()[0]["username"], "admin")
        wait_for(lambda: its_token()[0].get("revoked"), 30, "the command's token to be revoked")

    def test_3_bad_config_names_file_line_and_key(self):
        c = self.cluster
        config = os.path.join(c.root, "bad.toml")
        with open(config, "w") as f:
            f.write('entrypoint = "true"\n[resources]\nslots = "two"\nimage = "ubuntu"\n')
        out = c.det("cmd", "run", "--config-file", config)
        self.assertEqual(out.returncode, 1)
        self.assertIn(f"{config}:3", out.stderr)
        self.assertIn("resources.slots", out.stderr)
        self.assertIn("resources.image", out.stderr)
        override = c.det("cmd", "run", "-c", "resources.slots=-1", "--", "true")
        self.assertEqual(override.returncode, 1)
        self.assertIn("resources.slots", override.stderr)
        # The master checks what reaches it the same way.
        status, error = c.status("POST", "/api/v1/commands", {"config": "entrypoint = 7\n", "config_path": "api.toml"})
        self.assertEqual(status, 400)
        self.assertIn("api.toml:1", error)
        self.assertIn("entrypoint", error)
        status, error = c.status("POST", "/api/v1/commands",
                                 {"config": 'entrypoint = "true"\n[resources]\nresource_pool = "nope"\n'})
        self.assertEqual(status, 400)
        self.assertIn("nope", error)

    def test_4_a_command_holds_its_slots_until_killed(self):
        c = self.cluster
        out = c.det("cmd", "run", "-d", "-c", "resources.slots=2", "--", "sh", "-c",
                    "while true; do echo tick; sleep 0.2; done")
        self.assertEqual(out.returncode, 0, out.stderr)
        task_id = launched_id(out)
        wait_state(c, task_id, "TASK_STATE_RUNNING")
        exp_id = c.submit(simulated_config("waits for the command", batches=20, slots_per_trial=2))
        time.sleep(2)
        trial = c.experiment(exp_id)["trials"][0]
        self.assertEqual(trial["state"], "STATE_QUEUED")
        tasks = {t["id"]: t for t in c.get("/api/v1/tasks")["tasks"]}
        self.assertEqual(tasks[task_id]["type"], "COMMAND")
        self.assertIn(f"{trial['id']}.1", tasks)
        self.assertIn("tick", c.det("cmd", "logs", task_id).stdout)

        # Another user may read it but not kill it; nobody logged out may even list it.
        other = c.add_user("bob", "bob-password-1")
        self.assertEqual(c.status("POST", f"/api/v1/commands/{task_id}/kill", {}, token=other)[0], 403)
        self.assertEqual(c.status("GET", "/api/v1/commands", token=None)[0], 401)
        self.assertEqual(c.status("GET", f"/api/v1/notebooks/{task_id}")[0], 404)

        killed = c.det("cmd", "kill", task_id)
        self.assertEqual(killed.returncode, 0, killed.stderr)
        command = wait_state(c, task_id, "TASK_STATE_TERMINATED", timeout=30)
        self.assertIn("killed on request", command["exit_reason"])
        self.assertEqual(c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}, timeout=120)
                         ["experiment"]["state"], "STATE_COMPLETED")

    def test_5_a_running_command_survives_a_master_kill_9(self):
        c = self.cluster
        out = c.det("cmd", "run", "-d", "--", "sh", "-c", "i=0; while true; do echo line $i; i=$((i+1)); sleep 0.2; done")
        task_id = launched_id(out)
        wait_state(c, task_id, "TASK_STATE_RUNNING")
        os.kill(c.master.pid, signal.SIGKILL)
        c.master.wait()
        c._stop_leftover_postgres()
        time.sleep(1)
        c.start_master()
        wait_for(lambda: len(c.connected_agents()) == 1, 30, "the agent to re-register")
        self.assertEqual(command_of(c, task_id)["state"], "TASK_STATE_RUNNING")
        seen = len(c.get(f"/api/v1/tasks/{task_id}/logs?limit=100000")["logs"])
        # The same process goes on writing into the same log.
        wait_for(lambda: len(c.get(f"/api/v1/tasks/{task_id}/logs?limit=100000")["logs"]) > seen + 3, 30,
                 "more lines after the restart")
        texts = [l["text"] for l in c.get(f"/api/v1/tasks/{task_id}/logs?limit=100000")["logs"] if l["stream"] == "stdout"]
        numbers = [int(t.split()[1]) for t in texts if t.startswith("line ")]
        self.assertEqual(numbers, sorted(numbers))
        self.assertEqual(c.det("cmd", "kill", task_id).returncode, 0)
        wait_state(c, task_id, "TASK_STATE_TERMINATED", timeout=30)

    def test_6_a_notebook_through_the_proxy(self):
        c = self.cluster
        task_id, token = start_notebook(c)
        status, info = proxied(c, f"/proxy/{task_id}/api")
        self.assertEqual(status, 200, info)
        self.assertIn("version", info)
        self.assertEqual(execute(c, task_id, token, "print(6*7)").strip(), "42")
        # Nobody logged out, and no other user, reaches it; its own token does.
        self.assertEqual(proxied(c, f"/proxy/{task_id}/api", token=None)[0], 401)
        bob = c.login("bob", "bob-password-1") if "bob" in [u["username"] for u in c.get("/api/v1/users")["users"]] \
            else c.add_user("bob", "bob-password-1")
        self.assertEqual(proxied(c, f"/proxy/{task_id}/api", token=bob)[0], 403)
        self.assertEqual(proxied(c, f"/proxy/{task_id}/api?token={token}", token=None)[0], 200)
        self.assertEqual(proxied(c, f"/proxy/{task_id}/api?token=not-{token}", token=None)[0], 401)
        # Only its owner sees the token in its URL.
        self.assertNotIn(token, json.dumps(c.get(f"/api/v1/notebooks/{task_id}", token=bob)))
        self.assertIn(token, c.get(f"/api/v1/notebooks/{task_id}")["notebook"]["proxy_path"])

        # A master kill -9: the notebook is reachable again once the master is back.
        os.kill(c.master.pid, signal.SIGKILL)
        c.master.wait()
        c._stop_leftover_postgres()
        time.sleep(1)
        c.start_master()
        wait_for(lambda: proxied(c, f"/proxy/{task_id}/api")[0] == 200, 60, "the notebook to answer after the restart")
        self.assertEqual(c.det("notebook", "kill", task_id).returncode, 0)
        ended = wait_for(lambda: (lambda t: t if t["state"] == "TASK_STATE_TERMINATED" else None)(
            c.get(f"/api/v1/notebooks/{task_id}")["notebook"]), 30, "the notebook to end")
        self.assertIn("killed on request", ended["exit_reason"])
        self.assertEqual(proxied(c, f"/proxy/{task_id}/api")[0], 404)

    def test_7_an_idle_notebook_stops_and_a_used_one_does_not(self):
        c = self.cluster
        idle_id, _ = start_notebook(c, "-c", "idle_timeout=4")
        requested_id, _ = start_notebook(c, "-c", "idle_timeout=4")
        kernel_id, kernel_token = start_notebook(c, "-c", "idle_timeout=4")
        # One is kept in use by a kernel (the agent sees it on Jupyter's API), one by requests
        # through the proxy; the third by nothing.
        self.assertEqual(proxied(c, f"/proxy/{kernel_id}/api/kernels?token={kernel_token}", method="POST", body={})[0], 201)
        deadline = time.monotonic() + 9
        while time.monotonic() < deadline:
            self.assertEqual(proxied(c, f"/proxy/{requested_id}/api")[0], 200)
            time.sleep(1)
        idle = c.get(f"/api/v1/notebooks/{idle_id}")["notebook"]
        self.assertEqual(idle["state"], "TASK_STATE_TERMINATED")
        self.assertIn("without use", idle["exit_reason"])
        for used in (requested_id, kernel_id):
            self.assertEqual(c.get(f"/api/v1/notebooks/{used}")["notebook"]["state"], "TASK_STATE_RUNNING", used)
            c.det("notebook", "kill", used)

    def test_8_a_shell_through_the_proxy_tunnel(self):
        c = self.cluster
        out = c.det("shell", "start", "-d")
        self.assertEqual(out.returncode, 0, out.stderr)
        shell_id = out.stdout.strip().splitlines()[-1]
        opened = c.det("shell", "open", shell_id, "--", "echo", "$((6*7))", timeout=120)
        self.assertEqual(opened.returncode, 0, opened.stderr + c.log("agent-0"))
        self.assertEqual(opened.stdout.strip(), "42")
        # Logins see the task's variables.
        env = c.det("shell", "open", shell_id, "--", "echo", "$DET_TASK_ID")
        self.assertEqual(env.stdout.strip(), shell_id, env.stderr)
        # Its key goes to its owner only; the tunnel needs a session.
        bob = c.login("bob", "bob-password-1")
        self.assertNotIn("PRIVATE KEY", json.dumps(c.get(f"/api/v1/shells/{shell_id}", token=bob)))
        self.assertIn("PRIVATE KEY", c.get(f"/api/v1/shells/{shell_id}")["shell"]["private_key"])
        refused = c.det("shell", "open", shell_id, "--", "true", token=bob)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("only the owner", refused.stderr)
        self.assertEqual(proxied(c, f"/proxy/{shell_id}/", token=None)[0], 401)
        self.assertEqual(c.det("shell", "kill", shell_id).returncode, 0)
        wait_for(lambda: c.get(f"/api/v1/shells/{shell_id}")["shell"]["state"] == "TASK_STATE_TERMINATED", 30,
                 "the shell to end")

    def test_9_a_tensorboard_over_an_experiments_trials(self):
        c = self.cluster
        exp_id = c.submit(simulated_config("for tensorboard", batches=10))
        trial_id = c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=120)["trials"][0]["id"]
        out = c.det("tensorboard", "start", str(exp_id), "-c", 'tensorboard_args=["--samples_per_plugin=scalars=100"]',
                    timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        url = out.stdout.strip().splitlines()[-1]
        task_id = url.split("/proxy/")[1].split("/")[0]
        status, page = proxied(c, url[len(c.url):])
        self.assertEqual(status, 200, page)
        self.assertIn("fake TensorBoard", page)
        self.assertIn(f"trial_{trial_id}:", page)
        self.assertIn(f"/tensorboard/experiment/{exp_id}/trial/{trial_id}", page)
        self.assertIn("--samples_per_plugin=scalars=100", page)
        tensorboard = c.get(f"/api/v1/tensorboards/{task_id}")["tensorboard"]
        self.assertEqual(tensorboard["description"], f"TensorBoard: experiment {exp_id}")
        self.assertIn("the harness's trials write them", c.det("tensorboard", "logs", task_id).stdout)
        self.assertEqual(c.status("POST", "/api/v1/tensorboards", {"experiment_ids": [999999]})[0], 404)
        self.assertEqual(c.status("POST", "/api/v1/tensorboards", {})[0], 400)
        self.assertEqual(c.det("tensorboard", "kill", task_id).returncode, 0)


class MissingTensorBoardTest(unittest.TestCase):
    """An agent without TensorBoard: the task ends at once, saying which program is missing."""

    def test_the_missing_program_is_named(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        try:
            exp_id = c.submit(simulated_config("no tensorboard here", batches=5))
            out = c.det("tensorboard", "start", str(exp_id), timeout=120)
            self.assertEqual(out.returncode, 1)
            self.assertIn("tensorboard", out.stderr)
            ended = c.get("/api/v1/tensorboards")["tensorboards"][0]
            self.assertEqual(ended["state"], "TASK_STATE_TERMINATED")
            self.assertIn("never started", ended["exit_reason"])
            self.assertIn("tensorboard", ended["exit_reason"])
        finally:
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
