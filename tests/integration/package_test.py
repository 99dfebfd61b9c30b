#!/usr/bin/env python3
"""The release archive: scripts/package.sh builds it from this build, and, unpacked into a bare
Debian 12 rootfs that has none of det's packages (the container tests' image, run with podman),
it starts a master on the PostgreSQL it carries and an agent, logs in with its CLI, completes a
builtin:simulate search and runs a script written for Determined's Core API with the Python
clients it carries."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import urllib.request

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, wait_for  # noqa: E402
from container_image import ensure_python_image, podman_command, podman_env  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "../.."))
CORE_PROGRAM = os.path.join(os.path.dirname(__file__), "../data/programs/determined_trial")
# det's own libraries (and PostgreSQL's largest): the image must have none, so that what runs
# is the archive's lib/.
DET_LIBRARIES = ["libcaf_core", "libcaf_io", "libcaf_openssl", "libpqxx", "libpq.so", "libprotobuf",
                 "libtomlplusplus", "libyaml-cpp", "libsodium", "libarchive", "libgloo", "libicuuc", "libxml2"]
# What the archive takes from the machine it runs on: glibc and the C++ runtime.
HOST_LIBS = {"linux-vdso.so.1", "ld-linux-x86-64.so.2", "libc.so.6", "libm.so.6", "libdl.so.2", "libpthread.so.0",
             "librt.so.1", "libresolv.so.2", "libutil.so.1", "libanl.so.1", "libstdc++.so.6", "libgcc_s.so.1"}

SEARCH = """
name = "packaged-search"
entrypoint = "builtin:simulate"
max_restarts = 0
[hyperparameters]
x = { type = "double", minval = 0.0, maxval = 1.0 }
[searcher]
name = "random"
metric = "validation_loss"
max_trials = 3
max_concurrent_trials = 2
max_length = { batches = 100 }
[data]
seconds_per_batch = 0.02
[reproducibility]
experiment_seed = 7
"""

CORE_API = """
name = "packaged-core-api"
entrypoint = "python3 train.py"
max_restarts = 0
[hyperparameters]
x = 1
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 10 }
"""


class PackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        build = os.path.dirname(os.path.abspath(BIN))
        out = subprocess.run([os.path.join(ROOT, "scripts/package.sh"), build, build],
                             capture_output=True, text=True, timeout=600)
        print(out.stderr, file=sys.stderr, end="")
        if out.returncode != 0:
            raise AssertionError(f"scripts/package.sh failed:\n{out.stderr}")
        cls.archive = out.stdout.strip().splitlines()[-1]
        cls.folder = "/opt/" + re.match(r"(det-[0-9.]+)-linux-x86_64\.tar\.gz$", os.path.basename(cls.archive)).group(1)
        cls.image = ensure_python_image()
        # Bind-mounted at /work: the master's data directory, its ready file and the logs, read
        # from here. /tmp and 0755 so that the container's postgres user can enter it.
        cls.work = tempfile.mkdtemp(prefix="det-package-", dir="/tmp")
        os.chmod(cls.work, 0o755)
        cls.name = f"det-package-test-{os.getpid()}"
        cls.addClassCleanup(shutil.rmtree, cls.work, ignore_errors=True)
        cls.addClassCleanup(subprocess.run, podman_command() + ["rm", "--force", "--time", "0", cls.name],
                            env=podman_env(), capture_output=True)
        # The host's network, as det's own trial containers have: the test reaches the master on
        # 127.0.0.1 at the ports it picked. --init reaps what the master's children leave.
        subprocess.run(podman_command() + ["run", "--detach", "--init", "--name", cls.name, "--network", "host",
                                           "--volume", f"{cls.archive}:/release.tar.gz:ro",
                                           "--volume", f"{cls.work}:/work", cls.image, "sleep", "infinity"],
                       env=podman_env(), check=True, capture_output=True)
        cls.start_cluster()

    @classmethod
    def sh(cls, script, check=True, timeout=120):
        """`script` run by sh in the container; its CompletedProcess."""
        out = subprocess.run(podman_command() + ["exec", cls.name, "sh", "-c", script], env=podman_env(),
                             capture_output=True, text=True, timeout=timeout)
        if check and out.returncode != 0:
            raise AssertionError(f"in the container, {script!r} failed ({out.returncode}):\n{out.stdout}{out.stderr}"
                                 f"\n{cls.logs()}")
        return out

    @classmethod
    def logs(cls):
        text = ""
        for name in ("master.log", "agent.log", "data/postgres.log", "data/initdb.log"):
            try:
                with open(os.path.join(cls.work, name), errors="replace") as f:
                    text += f"--- {name}:\n{f.read()[-3000:]}\n"
            except FileNotFoundError:
                pass
        return text

    @classmethod
    def start_cluster(cls):
        # Unpacked and prepared as its README says: a postgres system user for the master that
        # runs as root, and a data directory that user can enter.
        cls.sh(f"tar -xzf /release.tar.gz -C /opt && test -x {cls.folder}/bin/det-node")
        cls.sh("id postgres >/dev/null 2>&1 || useradd --system postgres")
        cls.sh(f"exec {cls.folder}/bin/det-node --role=master --listen=127.0.0.1 --port=0 --http-port=0 "
               f"--data-dir=/work/data --ready-file=/work/ready.json >/work/master.log 2>&1 &")

        def ready():
            try:
                with open(os.path.join(cls.work, "ready.json")) as f:
                    return json.load(f)
            except (FileNotFoundError, json.JSONDecodeError):
                return None

        try:
            info = wait_for(ready, 120, "the master to serve")
        except AssertionError as e:
            raise AssertionError(f"{e}\n{cls.logs()}") from None
        cls.url = f"http://127.0.0.1:{info['http_port']}"
        with open(os.path.join(cls.work, "data/admin-password")) as f:
            cls.password = f.read().strip()
        cls.sh(f"exec {cls.folder}/bin/det-node --role=agent --master=127.0.0.1:{info['port']} --slots=cpu:2 "
               f"--id=packaged-agent --agent-token-file=/work/data/agent-token >/work/agent.log 2>&1 &")
        cls.token = cls.rest("POST", "/api/v1/auth/login", {"username": "admin", "password": cls.password})["token"]
        wait_for(lambda: any(a.get("connected") for a in cls.rest("GET", "/api/v1/agents").get("agents", [])),
                 60, "the agent to register")

    @classmethod
    def rest(cls, method, path, body=None):
        headers = {"Content-Type": "application/json"}
        if getattr(cls, "token", None):
            headers["Authorization"] = f"Bearer {cls.token}"
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(cls.url + path, data=data, method=method, headers=headers)
        with urllib.request.urlopen(request, timeout=30) as r:
            return json.load(r)

    def det(self, args, timeout=120):
        """The archive's CLI in the container, against the master; its CompletedProcess."""
        return self.sh(f"{self.folder}/bin/det -m {self.url} {args}", check=False, timeout=timeout)

    def login(self):
        out = self.sh(f"DET_PASS='{self.password}' {self.folder}/bin/det -m {self.url} user login admin", check=False)
        self.assertEqual(out.returncode, 0, out.stderr)

    def submit_and_wait(self, config_name, config, model_dir=""):
        with open(os.path.join(self.work, config_name), "w") as f:
            f.write(config)
        self.login()
        out = self.det(f"submit /work/{config_name} {model_dir}")
        self.assertEqual(out.returncode, 0, out.stderr)
        exp_id = int(out.stdout.split()[-1])
        wait = self.det(f"experiment wait {exp_id}", timeout=300)
        exp = self.rest("GET", f"/api/v1/experiments/{exp_id}")
        self.assertEqual(exp["experiment"]["state"], "STATE_COMPLETED", f"{wait.stdout}{wait.stderr}\n{self.logs()}")
        self.assertEqual(wait.returncode, 0, wait.stderr)  # det experiment wait: 0 when it COMPLETED
        return exp

    def test_the_image_lacks_det_and_the_archive_takes_only_glibc_and_libstdcxx_from_it(self):
        cache = self.sh("ldconfig -p").stdout
        for lib in DET_LIBRARIES:
            self.assertNotIn(lib, cache)
        for postgresql in ("/usr/lib/postgresql", "/usr/share/postgresql"):  # initdb's share/ is the archive's
            self.assertEqual(self.sh(f"test -e {postgresql}", check=False).returncode, 1, postgresql)
        for program in ["bin/det-node", "bin/det-worker", "bin/det", "pgsql/bin/initdb", "pgsql/bin/pg_ctl",
                        "pgsql/bin/postgres"]:
            for line in self.sh(f"ldd {self.folder}/{program}").stdout.splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[1] == "=>" and parts[0] not in HOST_LIBS:
                    self.assertTrue(parts[2].startswith(self.folder + "/"), f"{program}: {line}")

    def test_no_file_needs_a_glibc_newer_than_2_34(self):
        # RHEL 9 has 2.34 and Ubuntu 22.04 2.35: Debian's libarchive's arc4random_buf (2.36) is
        # served by the archive's libdet_glibc_compat where glibc has none.
        unpacked = tempfile.mkdtemp(prefix="det-glibc-", dir="/tmp")
        self.addCleanup(shutil.rmtree, unpacked, ignore_errors=True)
        subprocess.run(["tar", "-xzf", self.archive, "-C", unpacked], check=True)
        newest = (2, 0)
        for folder, _, files in os.walk(unpacked):
            for name in files:
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    if os.path.islink(path) or f.read(4) != b"\x7fELF":
                        continue
                symbols = subprocess.run(["objdump", "-T", path], capture_output=True, text=True).stdout
                for major, minor in re.findall(r"GLIBC_(\d+)\.(\d+)", symbols):
                    if (int(major), int(minor)) > (2, 34):
                        self.fail(f"{os.path.relpath(path, unpacked)} needs GLIBC_{major}.{minor}")
                    newest = max(newest, (int(major), int(minor)))
        self.assertEqual(newest, (2, 34))

    def test_a_simulated_search_completes(self):
        exp = self.submit_and_wait("search.toml", SEARCH)
        self.assertEqual(len(exp["trials"]), 3)
        self.assertEqual({t["state"] for t in exp["trials"]}, {"STATE_COMPLETED"})
        # The image has no PostgreSQL (above): the master ran on the archive's. It serves the archive's web UI:
        with urllib.request.urlopen(self.url + "/", timeout=30) as r:
            self.assertIn("<html", r.read().decode().lower())

    def test_a_core_api_script_imports_the_archives_clients(self):
        shutil.copytree(CORE_PROGRAM, os.path.join(self.work, "determined_trial"), dirs_exist_ok=True)
        exp = self.submit_and_wait("core.toml", CORE_API, "/work/determined_trial")
        (trial,) = exp["trials"]
        self.assertEqual(int(trial["total_batches"]), 10)
        self.assertIn("validation_loss", trial["latest_validation"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
