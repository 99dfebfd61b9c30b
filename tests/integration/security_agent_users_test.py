#!/usr/bin/env python3
"""A Unix identity per det user on agents (issue 35): a root agent runs each user's work as that
user's own uid and gid, the one an admin linked (det user link-with-agent-user) or else
security.task_uid_base + the user's id, never as the agent's own. So one user's command cannot
read another's process environment (DET_ALLOCATION_TOKEN, DET_USER_TOKEN) or run directory; only
an admin links users; a command in an image runs as its owner's uid too."""

import os
import shutil
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, pids_with_args, simulated_config, wait_for  # noqa: E402
from security_test import TwoUsersCluster  # noqa: E402

TASK_UID_BASE = 200000
LINKED_UID, LINKED_GID = 54321, 54322


def user_id(c, name):
    return int([u for u in c.get("/api/v1/users")["users"] if u["username"] == name][0]["id"])


def command_of(c, task_id):
    return c.get(f"/api/v1/commands/{task_id}")["command"]


def pid_of_task(task_id):
    """The pid of the process whose environment says it is task `task_id` (read as root)."""
    wanted = f"DET_TASK_ID={task_id}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if wanted in f.read().split(b"\0"):
                    return int(entry)
        except OSError:
            continue
    return None


def parent_of(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def worker_of(agent_pid, trial_id):
    """The pid of trial_id's worker among the agent's children (other suites' clusters may run
    workers of trials with the same id at the same time)."""
    for pid in pids_with_args(f"--trial={trial_id}"):
        try:
            if parent_of(pid) == agent_pid:
                return pid
        except OSError:
            continue  # ended meanwhile
    return None


def uid_gid_of(pid):
    with open(f"/proc/{pid}/status") as f:
        fields = dict(line.split(":", 1) for line in f if ":" in line)
    return int(fields["Uid"].split()[0]), int(fields["Gid"].split()[0])


def exit_code_of_command(c, token, script, *config):
    """The exit code the master stored for `sh -c script` run by the user of `token`."""
    out = c.det("cmd", "run", *config, "--", "sh", "-c", script, token=token)
    task_id = [t for t in c.get("/api/v1/commands")["commands"]
               if t["state"] == "TASK_STATE_TERMINATED" and script in t["entrypoint"]][-1]["id"]
    command = command_of(c, task_id)
    return command.get("exit_code", 0), command.get("exit_reason", ""), out


class AgentUsersTest(TwoUsersCluster):
    def test_a_one_users_command_cannot_read_anothers_environment_or_run_directory(self):
        c = self.cluster
        out = c.det("cmd", "run", "-d", "--", "sh", "-c", "sleep 120", token=self.alice)
        self.assertEqual(out.returncode, 0, out.stderr)
        alice_task = out.stdout.strip().splitlines()[-1]
        try:
            pid = wait_for(lambda: pid_of_task(alice_task), 60, "alice's command to run")
            run_dir = os.readlink(f"/proc/{pid}/cwd")
            with open(f"/proc/{pid}/environ", "rb") as f:
                self.assertIn(b"DET_ALLOCATION_TOKEN=", f.read())  # there is something to steal
            # mallory tries both; each attempt that works is an exit code of its own.
            # Nor what the agent keeps: its token file and its own environment.
            script = (f"cat /proc/{pid}/environ >/dev/null 2>&1 && exit 10; "
                      f"ls {run_dir} >/dev/null 2>&1 && exit 11; "
                      f"cat {c.agent_token_file} >/dev/null 2>&1 && exit 13; "
                      f"cat /proc/{c.agents[0].pid}/environ >/dev/null 2>&1 && exit 14; "
                      f"cat /proc/{pid}/cmdline >/dev/null 2>&1 || exit 12; exit 0")
            code, reason, out = exit_code_of_command(c, self.mallory, script)
            self.assertEqual(code, 0, f"{reason}\n{out.stderr}\n{c.log('agent-0')}")
            self.assertEqual(os.stat(run_dir).st_mode & 0o777, 0o700)
            self.assertNotEqual(os.stat(run_dir).st_uid, 0)
        finally:
            c.det("cmd", "kill", alice_task)

    def test_b_a_linked_user_runs_as_its_link_and_an_unlinked_one_as_the_base_plus_its_id(self):
        c = self.cluster
        linked = c.det("user", "link-with-agent-user", "alice", "--agent-uid", str(LINKED_UID), "--agent-gid",
                       str(LINKED_GID), "--agent-user", "alice-unix", "--agent-group", "alice-group")
        self.assertEqual(linked.returncode, 0, linked.stderr)
        stored = [u for u in c.get("/api/v1/users")["users"] if u["username"] == "alice"][0]
        self.assertEqual(int(stored["agent_user_group"]["agent_uid"]), LINKED_UID)
        self.assertEqual(stored["agent_user_group"]["agent_user"], "alice-unix")
        check = 'test "$(id -u):$(id -g)" = "{}:{}" && test "$USER" = "{}" || exit 7'
        code, reason, out = exit_code_of_command(c, self.alice, check.format(LINKED_UID, LINKED_GID, "alice-unix"))
        self.assertEqual(code, 0, f"{reason}\n{out.stderr}")
        mallory_uid = TASK_UID_BASE + user_id(c, "mallory")
        code, reason, out = exit_code_of_command(
            c, self.mallory, check.format(mallory_uid, mallory_uid, f"det-user-{user_id(c, 'mallory')}"))
        self.assertEqual(code, 0, f"{reason}\n{out.stderr}")
        # And a trial's worker: the experiment's owner's uid, which is not the agent's.
        exp = c.post("/api/v1/experiments", {"config": simulated_config("mallory's", 100, seconds_per_batch=0.05)},
                     token=self.mallory)
        exp_id = int(exp["experiment"]["id"])
        trial_id = c.first_trial(exp_id)
        worker = wait_for(lambda: worker_of(c.agents[0].pid, trial_id), 60, "the trial's worker")
        self.assertEqual(uid_gid_of(worker), (mallory_uid, mallory_uid))
        self.assertEqual(c.wait_experiment(exp_id, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)["experiment"]["state"],
                         "STATE_COMPLETED")

    def test_c_only_an_admin_links_a_user_to_a_unix_user(self):
        c = self.cluster
        refused = c.det("user", "link-with-agent-user", "mallory", "--agent-uid", "1234", "--agent-gid", "1234",
                        "--agent-user", "m", "--agent-group", "m", token=self.mallory)
        self.assertNotEqual(refused.returncode, 0)
        self.assertIn("admin", refused.stderr)
        status, _ = c.status("PATCH", f"/api/v1/users/{user_id(c, 'mallory')}",
                             {"agentUserGroup": {"agentUid": 1234, "agentGid": 1234, "agentUser": "m", "agentGroup": "m"}},
                             token=self.mallory)
        self.assertEqual(status, 403)
        stored = [u for u in c.get("/api/v1/users")["users"] if u["username"] == "mallory"][0]
        self.assertNotIn("agent_user_group", stored)
        # Nor may an admin link anyone to root, or into the range of unlinked users.
        for uid, why in ((0, "root's"), (TASK_UID_BASE + 5, "range of unlinked det users")):
            status, sentence = c.status("PATCH", "/api/v1/users/mallory",
                                        {"agentUserGroup": {"agentUid": uid, "agentGid": 1234, "agentUser": "m",
                                                            "agentGroup": "m"}})
            self.assertEqual(status, 400, sentence)
            self.assertIn(why, sentence)

    @unittest.skipUnless(shutil.which("podman"), "podman is not installed")
    def test_d_a_command_in_an_image_runs_as_its_owners_uid(self):
        from container_image import ensure_python_image  # noqa: E402
        c = self.cluster
        image = ensure_python_image()
        config = os.path.join(c.root, f"image-{time.monotonic_ns()}.toml")
        with open(config, "w") as f:
            f.write(f'[environment]\nimage = "{image}"\n')
        mallory_uid = TASK_UID_BASE + user_id(c, "mallory")
        code, reason, out = exit_code_of_command(c, self.mallory, f'test "$(id -u)" = "{mallory_uid}" || exit 7',
                                                 "--config-file", config)
        self.assertEqual(code, 0, f"{reason}\n{out.stderr}")


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"), "needs root to start an agent as another user")
class NonRootAgentTest(unittest.TestCase):
    """An agent that is not root cannot switch users: it refuses a det user's work, saying how to allow it."""

    def test_a_non_root_agent_refuses_other_users_work_naming_its_setting(self):
        c = Cluster(agents=0).start()
        agent = None
        try:
            mallory = c.add_user("mallory", "mallory-password-1")
            env = dict(os.environ, DET_AGENT_TOKEN=c.read_data_file("agent-token"))
            with open(os.path.join(c.root, "nobody-agent.log"), "ab") as log:
                agent = subprocess.Popen(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                          os.path.join(c.bin_dir, "det-node"), "--role=agent",
                                          f"--master=127.0.0.1:{c.port}", "--slots=cpu:1", "--id=nobody-agent"],
                                         env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            wait_for(lambda: len(c.connected_agents()) == 1, 30, "the agent run as nobody to register")
            _, reason, out = exit_code_of_command(c, mallory, "true")
            self.assertNotEqual(out.returncode, 0)
            self.assertIn("--run-tasks-as=agent-user", reason)
        finally:
            if agent is not None:
                c.stop_process(agent)
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
