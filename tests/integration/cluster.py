"""A real det cluster on 127.0.0.1 for integration tests and benchmarks.

Starts det-node processes (master on an embedded PostgreSQL, agents) on free
ports, and stops exactly the processes it started, by pid.
"""

import datetime
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

BIN = os.environ.get("DET_BIN_DIR", os.path.join(os.path.dirname(__file__), "../../build/bin"))


def wait_for(predicate, timeout, what, interval=0.1):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def pids_with_args(*args):
    """pids of the processes on this machine whose command line has every one of `args`."""
    wanted = [a.encode() for a in args]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if all(w in argv for w in wanted):
            found.append(int(entry))
    return found


def parse_time(text):
    """A REST timestamp as seconds since the epoch."""
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


class Cluster:
    """With tls=True the master serves HTTPS and TLS actor links with certificates made for this
    cluster (self.pki), and its agents, the CLI and REST calls here use them."""

    def __init__(self, agents=1, slots="cpu:1", master_config=None, bin_dir=None, tls=False, agent_args=()):
        # /tmp rather than the build tree: the postgres user must reach the data directory.
        self.root = tempfile.mkdtemp(prefix="det-it-", dir="/tmp")
        os.chmod(self.root, 0o755)
        self.data_dir = os.path.join(self.root, "data")
        self.agent_specs = [(f"agent-{i}", slots) for i in range(agents)]
        self.agent_args = list(agent_args)  # more det-node --role=agent flags, e.g. --tensorboard=PROGRAM
        self.pki = self.ssl_context = None
        if tls:
            from certificates import TestPki
            self.pki = TestPki(os.path.join(self.root, "tls"))
            cert, key = self.pki.sign("master")
            self.agent_cert, self.agent_key = self.pki.sign("agent")
            self.ssl_context = ssl.create_default_context(cafile=self.pki.ca)
            master_config = (master_config or "") + f"""
[security.tls]
cert = "{cert}"
key = "{key}"
ca = "{self.pki.ca}"
"""
        self.master_config = None
        if master_config is not None:
            self.master_config = os.path.join(self.root, "master.toml")
            with open(self.master_config, "w") as f:
                f.write(master_config)
        self.bin_dir = bin_dir or BIN  # benchmarks start a baseline build from elsewhere
        self.token = None
        self.master = None
        self.agents = []
        self.logs = []
        self.master_groups = []

    # -- processes ------------------------------------------------------------

    def _spawn(self, name, args):
        log = open(os.path.join(self.root, f"{name}.log"), "ab")
        self.logs.append(log)
        return subprocess.Popen([os.path.join(self.bin_dir, "det-node")] + args, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)

    def start_master(self):
        ready = os.path.join(self.root, "ready.json")
        if os.path.exists(ready):
            os.remove(ready)
        args = ["--role=master", "--listen=127.0.0.1", "--data-dir", self.data_dir,
                "--ready-file", ready]
        if self.master_config:
            args += ["--config", self.master_config]
        # Keep the ports across restarts so that agents find the master again.
        args += ["--port", str(getattr(self, "port", 0)),
                 "--http-port", str(getattr(self, "http_port", 0))]
        self.master = self._spawn("master", args)
        # Agents a pool's process provider starts share the master's process group and outlive a
        # master killed with SIGKILL: stop() ends every group a master of this cluster led.
        self.master_groups.append(self.master.pid)

        def read_ready():
            if self.master.poll() is not None:
                raise AssertionError("the master exited:\n" + self.log("master"))
            try:
                with open(ready) as f:
                    return json.load(f)
            except (FileNotFoundError, json.JSONDecodeError):
                return None

        info = wait_for(read_ready, 90, "the master to serve")
        self.port, self.http_port = info["port"], info["http_port"]
        self.url = f"{'https' if self.pki else 'http'}://127.0.0.1:{self.http_port}"
        # The first start gave admin a random password; every suite logs in with it. (A baseline
        # build from before users existed has none.)
        if os.path.exists(os.path.join(self.data_dir, "admin-password")):
            self.admin_password = self.read_data_file("admin-password")
            self.token = self.login("admin", self.admin_password)

    def read_data_file(self, name):
        with open(os.path.join(self.data_dir, name)) as f:
            return f.read().strip()

    def login(self, username, password):
        """A session token of `username` (POST /api/v1/auth/login)."""
        reply = self.request("POST", "/api/v1/auth/login", {"username": username, "password": password}, token=None)
        return reply["token"]

    @property
    def agent_token_file(self):
        return os.path.join(self.data_dir, "agent-token")

    def _spawn_agent(self, agent_id, slots):
        tls = [f"--master-ca={self.pki.ca}", f"--tls-cert={self.agent_cert}", f"--tls-key={self.agent_key}"] if self.pki else []
        return self._spawn(agent_id, ["--role=agent", f"--master=127.0.0.1:{self.port}", f"--slots={slots}",
                                      f"--id={agent_id}", f"--agent-token-file={self.agent_token_file}"] + tls +
                           self.agent_args)

    def start_agents(self):
        if not self.agent_specs:
            return  # a pool's provider may start agents of its own
        for agent_id, slots in self.agent_specs:
            self.agents.append(self._spawn_agent(agent_id, slots))
        wait_for(lambda: len(self.connected_agents()) == len(self.agent_specs), 30,
                 "the agents to register")

    def restart_agent(self, index):
        """Starts agent `index` again after a test killed it, and waits for it to register."""
        agent_id, slots = self.agent_specs[index]
        self.agents[index] = self._spawn_agent(agent_id, slots)
        wait_for(lambda: any(a["id"] == agent_id for a in self.connected_agents()), 30, f"{agent_id} to register")

    def start(self):
        self.start_master()
        self.start_agents()
        return self

    def stop_process(self, proc, timeout=30):
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        start = time.monotonic()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            print(f"cluster: pid {proc.pid} ignored SIGTERM for {timeout}s and was killed",
                  file=sys.stderr)
        if time.monotonic() - start > 5:
            print(f"cluster: pid {proc.pid} took {time.monotonic() - start:.1f}s to stop",
                  file=sys.stderr)

    def stop_master(self):
        self.stop_process(self.master)

    def stop(self):
        for a in self.agents:
            self.stop_process(a)
        self.stop_master()
        self._stop_leftover_postgres()
        self._stop_master_groups()
        for log in self.logs:
            log.close()
        if os.environ.get("DET_IT_KEEP_ROOT"):  # to read a failed run's logs afterwards
            print(f"cluster: kept {self.root}", file=sys.stderr)
            return
        subprocess.run(["rm", "-rf", self.root], check=False)

    def _stop_master_groups(self):
        for group in self.master_groups:
            try:
                os.killpg(group, signal.SIGTERM)
            except ProcessLookupError:
                continue
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                try:
                    os.killpg(group, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                try:
                    os.killpg(group, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _stop_leftover_postgres(self):
        # Only if the master died without stopping its PostgreSQL: the pid file names it.
        for path in (os.path.join(self.data_dir, "postgres", "postmaster.pid"),):
            try:
                with open(path) as f:
                    pid = int(f.readline())
                os.kill(pid, signal.SIGQUIT)
            except (OSError, ValueError):
                pass

    def log(self, name):
        try:
            with open(os.path.join(self.root, f"{name}.log"), errors="replace") as f:
                return f.read()[-4000:]
        except FileNotFoundError:
            return ""

    # -- REST and CLI ---------------------------------------------------------

    def request(self, method, path, body=None, token="admin"):
        """The JSON reply of a REST call as admin, as the user whose `token` is given, or with none (None).
        urllib.error.HTTPError on an error status."""
        headers = {"Content-Type": "application/json"}
        token = self.token if token == "admin" else token
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(req, timeout=30, context=self.ssl_context) as r:
            return json.load(r)

    def status(self, method, path, body=None, token="admin"):
        """(HTTP status, the error's sentence or the reply) of a REST call."""
        try:
            return 200, self.request(method, path, body, token=token)
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}").get("error", "")

    def proxy_origin(self, task_id):
        """Where the master serves task `task_id`'s service: its proxy listener's origin."""
        return self.get("/api/v1/master", token=None)["proxy_url"].replace("{task_id}", task_id)

    def proxy_opener(self):
        """A urllib opener with a cookie jar of its own (a browser's, for the proxy's cookies)."""
        return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(),
                                           urllib.request.HTTPSHandler(context=self.ssl_context))

    def proxy_session(self, task_id, token="admin"):
        """An opener (proxy_opener) holding task `task_id`'s grant cookie: the ticket the user whose
        `token` is given asks for, spent on the proxy listener. urllib.error.HTTPError if refused."""
        url = self.post(f"/api/v1/tasks/{task_id}/proxy_ticket", {}, token=token)["url"]
        opener = self.proxy_opener()
        with opener.open(url, timeout=30) as r:  # 302 without the ticket, with the cookie; then the service
            r.read()
        return opener

    def add_user(self, username, password):
        """Creates a user (as admin) and returns a session token of it."""
        self.post("/api/v1/users", {"username": username, "password": password})
        return self.login(username, password)

    def get(self, path, token="admin"):
        return self.request("GET", path, token=token)

    def post(self, path, body, token="admin"):
        return self.request("POST", path, body, token=token)

    def det(self, *args, timeout=600, token="admin", input=None):
        """The det CLI as admin, as the user whose `token` is given, or logged out (None); its
        HOME is the cluster's own directory, so its saved logins are too."""
        env = dict(os.environ, HOME=self.root)
        env.pop("DET_USER_TOKEN", None)
        if self.pki:
            env["DET_MASTER_CERT_FILE"] = self.pki.ca
        token = self.token if token == "admin" else token
        if token is not None:
            env["DET_USER_TOKEN"] = token
        return subprocess.run([os.path.join(BIN, "det"), "-m", self.url] + list(args),
                              capture_output=True, text=True, timeout=timeout, env=env, input=input)

    def connected_agents(self):
        try:
            return [a for a in self.get("/api/v1/agents").get("agents", []) if a.get("connected")]
        except (urllib.error.URLError, ConnectionError):
            return []

    def submit(self, config_text, name="exp.toml"):
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(config_text)
        out = self.post("/api/v1/experiments", {"config": config_text, "config_path": path})
        return int(out["experiment"]["id"])

    def submit_directory(self, config_text, model_dir, name="exp.toml"):
        """`det submit` of a config with `model_dir` as its model definition; the experiment's id."""
        path = os.path.join(self.root, name)
        with open(path, "w") as f:
            f.write(config_text)
        out = self.det("submit", path, model_dir)
        if out.returncode != 0:
            raise AssertionError(f"det submit {name} failed: {out.stderr}")
        return int(out.stdout.split()[-1])

    def first_report_time(self, trial_id):
        """When the trial's first training report was taken (seconds since the epoch), or None."""
        reports = self.get(f"/api/v1/trials/{trial_id}/metrics?group=training&limit=1")["metrics"]
        return parse_time(reports[0]["time"]) if reports else None

    def experiment(self, exp_id):
        return self.get(f"/api/v1/experiments/{exp_id}")

    def wait_experiment(self, exp_id, states, timeout=300, interval=0.1):
        def reached():
            exp = self.experiment(exp_id)
            return exp if exp["experiment"]["state"] in states else None
        return wait_for(reached, timeout, f"experiment {exp_id} to reach {states}", interval)

    def training_samples_per_second(self, trial_id):
        """Records trained per second from the trial's first training report to its last: start-up
        is left out, and the reporting itself is inside the measurement."""
        reports = self.get(f"/api/v1/trials/{trial_id}/metrics?group=training")["metrics"]
        assert len(reports) >= 2, f"trial {trial_id} made {len(reports)} training reports: train longer"
        first, last = reports[0], reports[-1]
        records = int(last["total_records"]) - int(first["total_records"])
        return records / (parse_time(last["time"]) - parse_time(first["time"]))

    def agent_of(self, trial_id):
        """(agent id, allocation id) of the agent whose slot holds a run of the trial, if any."""
        for a in self.get("/api/v1/agents")["agents"]:
            for s in a["slots"]:
                if s.get("allocation_id", "").startswith(f"{trial_id}."):
                    return a["id"], s["allocation_id"]
        return None

    def agent_connected(self, agent_id):
        return any(a["id"] == agent_id and a.get("connected") for a in self.get("/api/v1/agents")["agents"])

    def first_trial(self, exp_id):
        """The id of the experiment's first trial, once it has one."""
        return wait_for(lambda: (self.experiment(exp_id)["trials"] or [None])[0], 30, "the trial")["id"]

    def trial_logs(self, trial_id):
        return [l["text"] for l in self.get(f"/api/v1/trials/{trial_id}/logs?limit=10000")["logs"]]


def simulated_config(name, batches, seconds_per_batch=0.02, max_restarts=0, checkpoint_period=50,
                     validation_period=50, scheduling_unit=25, slots_per_trial=1):
    """One builtin:simulate trial (searcher `single`) that trains `batches` at a set pace."""
    return f"""
name = "{name}"
entrypoint = "builtin:simulate"
max_restarts = {max_restarts}
min_checkpoint_period = {{ batches = {checkpoint_period} }}
min_validation_period = {{ batches = {validation_period} }}
scheduling_unit = {scheduling_unit}
[resources]
slots_per_trial = {slots_per_trial}
[hyperparameters]
x = 0.5
[searcher]
name = "single"
metric = "validation_loss"
max_length = {{ batches = {batches} }}
[data]
seconds_per_batch = {seconds_per_batch}
"""


def simulate(name, trials, batches, seconds_per_batch=0.02, priority=None, weight=None, max_slots=None,
             slots_per_trial=1, max_restarts=0):
    """A random search of `trials` builtin:simulate trials that train `batches` at a set pace."""
    resources = f"slots_per_trial = {slots_per_trial}\n"
    if priority is not None:
        resources += f"priority = {priority}\n"
    if weight is not None:
        resources += f"weight = {weight}\n"
    if max_slots is not None:
        resources += f"max_slots = {max_slots}\n"
    return f"""
name = "{name}"
entrypoint = "builtin:simulate"
max_restarts = {max_restarts}
[resources]
{resources}
[hyperparameters]
x = {{ type = "double", minval = 0.0, maxval = 1.0 }}
[searcher]
name = "random"
metric = "validation_loss"
max_trials = {trials}
max_concurrent_trials = {trials}
max_length = {{ batches = {batches} }}
[data]
seconds_per_batch = {seconds_per_batch}
[reproducibility]
experiment_seed = 7
"""


def synthetic_config(name="synthetic", batches=200, max_restarts=0, validation_period=100):
    return f"""
name = "{name}"
entrypoint = "builtin:mlp"
max_restarts = {max_restarts}
min_validation_period = {{ batches = {validation_period} }}

[hyperparameters]
global_batch_size = 32
learning_rate = 0.003
hidden_sizes = [64]
dropout = 0.0
optimizer = "adam"

[searcher]
name = "single"
metric = "validation_accuracy"
smaller_is_better = false
max_length = {{ batches = {batches} }}

[data]
dataset = "synthetic"
synthetic_train_size = 2048
synthetic_val_size = 512

[reproducibility]
experiment_seed = 7
"""
