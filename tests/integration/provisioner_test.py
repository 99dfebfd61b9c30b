#!/usr/bin/env python3
"""Elastic agents: pools whose provider launches agents for the pending work and terminates them
when idle. The process provider (det-node agents on this machine), the command provider (shell
commands that run det's generated start-up script) and their failures; a master killed with
SIGKILL during a scale-up leaks and doubles nothing."""

import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, pids_with_args, simulate, wait_for  # noqa: E402
from slurm_fixture import SlurmCluster  # noqa: E402

DONE = {"STATE_COMPLETED", "STATE_ERROR", "STATE_CANCELED"}


def pool_config(provider, reconnect_wait="3s"):
    return f"""
[resource_manager]
agent_reconnect_wait = "{reconnect_wait}"
[[resource_pools]]
pool_name = "elastic"
[resource_pools.provider]
{provider}
"""


def process_provider(min_instances=0, max_instances=3, instance_slots=2, idle="3s"):
    return pool_config(f"""type = "process"
min_instances = {min_instances}
max_instances = {max_instances}
instance_slots = {instance_slots}
max_idle_agent_period = "{idle}"
max_agent_starting_period = "60s"
""")


def search(trials, batches=60, seconds_per_batch=0.03):
    return simulate("elastic", trials=trials, batches=batches, seconds_per_batch=seconds_per_batch)


def provisioner(c):
    (p,) = c.get("/api/v1/provisioners")["provisioners"]
    return p


def agent_processes(pool="elastic"):
    """pids of det-node agents of `pool` on this machine, from their command lines."""
    return pids_with_args("--role=agent", f"--pool={pool}")


def agent_instances(pool="elastic"):
    """The instance ids (--id=) of the agent processes of `pool`: a child an agent is starting
    shows the agent's command line until its exec, so counting pids may count an agent twice."""
    ids = set()
    for pid in agent_processes(pool):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                ids.update(a[5:] for a in f.read().split(b"\0") if a.startswith(b"--id="))
        except OSError:
            pass  # it ended meanwhile
    return ids


def assert_token_hidden(test, c, pids):
    """The agent token is in neither the environment nor the command line of any of `pids`: what
    an agent's environment holds, every worker and task it starts inherits."""
    token = c.read_data_file("agent-token").strip().encode()
    test.assertTrue(pids)
    for pid in pids:
        for part in ("environ", "cmdline"):
            try:
                with open(f"/proc/{pid}/{part}", "rb") as f:
                    test.assertNotIn(token, f.read(), f"agent {pid}'s {part}")
            except FileNotFoundError:
                pass  # it ended meanwhile


class ProcessProviderTest(unittest.TestCase):
    def test_scales_up_for_pending_work_and_back_to_zero_when_idle(self):
        c = Cluster(agents=0, master_config=process_provider()).start()
        try:
            self.assertEqual(provisioner(c)["instances"], [])
            exp = c.submit(search(trials=5))
            most_agents = 0
            deadline = time.monotonic() + 240
            while c.experiment(exp)["experiment"]["state"] not in DONE:
                self.assertLess(time.monotonic(), deadline, "the search did not finish")
                most_agents = max(most_agents, len(c.connected_agents()), len(agent_instances()))
                time.sleep(0.2)
            self.assertEqual(c.experiment(exp)["experiment"]["state"], "STATE_COMPLETED")
            # 5 one-slot trials on 2-slot instances: ceil(5 / 2) = 3, and never more.
            self.assertEqual(int(provisioner(c)["launched"]), 3)
            self.assertEqual(most_agents, 3)
            pools = {p["name"]: p for p in c.get("/api/v1/resource-pools")["resource_pools"]}
            self.assertEqual(pools["elastic"]["provisioner"]["provider"], "process")
            # Idle past max_idle_agent_period: every instance is terminated, its process gone.
            wait_for(lambda: not provisioner(c)["instances"] and not agent_processes(), 60,
                     "the idle agents to be terminated")
            wait_for(lambda: not c.connected_agents(), 60, "the agents to leave the pool")
            decision = provisioner(c)["last_decision"]
            self.assertIn("reason", decision)
            listing = c.det("provisioner", "list").stdout
            self.assertIn("Pool elastic: process provider, 0 to 3 instances of 2 slots", listing)
        finally:
            c.stop()
        self.assertEqual(agent_processes(), [])

    def test_min_instances_keeps_one_agent(self):
        c = Cluster(agents=0, master_config=process_provider(min_instances=1, idle="2s")).start()
        try:
            wait_for(lambda: len(c.connected_agents()) == 1, 60, "the minimum agent to register")
            assert_token_hidden(self, c, agent_processes())
            time.sleep(6)  # three idle periods
            p = provisioner(c)
            self.assertEqual(len(p["instances"]), 1)
            self.assertEqual(int(p["launched"]), 1)
            self.assertTrue(p["instances"][0]["agent_idle"])
            self.assertEqual(len(c.connected_agents()), 1)
            repl = c.det("repl", "-c", "inspect provisioner elastic")
            self.assertEqual(repl.returncode, 0, repl.stderr)
            self.assertIn("provider: process", repl.stdout)
            self.assertIn(f"instance {p['instances'][0]['id']}: running", repl.stdout)
        finally:
            c.stop()

    def test_master_killed_during_scale_up_leaks_and_doubles_nothing(self):
        c = Cluster(agents=0, master_config=process_provider(idle="3s")).start()
        try:
            exp = c.submit(search(trials=5, batches=120))
            wait_for(lambda: provisioner(c)["instances"], 30, "the first instance")
            c.master.send_signal(signal.SIGKILL)
            c.master.wait()
            self.assertGreater(len(agent_processes()), 0)  # the agents outlive their master
            c.start_master()
            most = 0
            deadline = time.monotonic() + 300
            while c.experiment(exp)["experiment"]["state"] not in DONE:
                self.assertLess(time.monotonic(), deadline, "the search did not finish")
                most = max(most, len(agent_instances()))
                time.sleep(0.2)
            self.assertEqual(c.experiment(exp)["experiment"]["state"], "STATE_COMPLETED")
            self.assertLessEqual(most, 3)
            # The two masters launched 3 together: the second took back what the first had started
            # (each launch leaves its agent's log in the pool's directory).
            launched = os.listdir(os.path.join(c.data_dir, "provisioner", "elastic"))
            self.assertEqual(len([f for f in launched if f.endswith(".log")]), 3, launched)
            wait_for(lambda: not provisioner(c)["instances"] and not agent_processes(), 60,
                     "the idle agents to be terminated")
        finally:
            c.stop()


class CommandProviderTest(unittest.TestCase):
    def test_commands_run_the_generated_start_up_script(self):
        # A "cloud" of background processes: launch runs det's start-up script, as a VM's user
        # data would; list names the instances whose process lives; terminate kills one.
        cloud = tempfile.mkdtemp(prefix="det-cloud-")
        provider = f"""type = "command"
max_instances = 2
instance_slots = 1
max_idle_agent_period = "3s"
launch = "nohup sh {{startup_script}} > {cloud}/{{instance_id}}.log 2>&1 & echo $! > {cloud}/{{instance_id}}.pid"
list = "for f in {cloud}/*.pid; do [ -e $f ] && kill -0 $(cat $f) 2>/dev/null && echo $(basename $f .pid) running; done; true"
terminate = "kill $(cat {cloud}/{{instance_id}}.pid) && rm {cloud}/{{instance_id}}.pid"
"""
        c = Cluster(agents=0, master_config=pool_config(provider)).start()
        try:
            exp = c.submit(search(trials=2, batches=40))
            wait_for(lambda: c.connected_agents(), 60, "a launched agent to register")
            assert_token_hidden(self, c, agent_processes())
            c.wait_experiment(exp, DONE, timeout=180)
            self.assertEqual(c.experiment(exp)["experiment"]["state"], "STATE_COMPLETED")
            self.assertEqual(int(provisioner(c)["launched"]), 2)
            wait_for(lambda: not provisioner(c)["instances"], 60, "the idle instances to be terminated")
            self.assertEqual([f for f in os.listdir(cloud) if f.endswith(".pid")], [])
        finally:
            for name in os.listdir(cloud):
                if name.endswith(".pid"):
                    with open(os.path.join(cloud, name)) as f:
                        try:
                            os.kill(int(f.read()), signal.SIGKILL)
                        except (ProcessLookupError, ValueError):
                            pass
            c.stop()
            subprocess.run(["rm", "-rf", cloud], check=False)

    def test_a_failing_launch_is_reported_and_retried_with_backoff(self):
        provider = """type = "command"
min_instances = 1
max_instances = 1
launch = "echo 'quota exceeded for {pool}' >&2; exit 3"
list = "true"
terminate = "true"
"""
        c = Cluster(agents=0, master_config=pool_config(provider)).start()
        try:
            wait_for(lambda: int(provisioner(c)["failed_launches"]) >= 2, 30, "two failed launches")
            time.sleep(8)
            p = provisioner(c)
            self.assertIn("quota exceeded for elastic", p["last_error"])
            self.assertIn("exited with code 3", p["last_error"])
            # 2 s, 4 s, 8 s between tries: not a tight loop.
            self.assertLessEqual(int(p["failed_launches"]), 5)
            self.assertIn("retry_time", p)
            self.assertEqual(p["instances"], [])
        finally:
            c.stop()


@unittest.skipUnless(SlurmCluster.available(), "needs root and Debian's slurm-wlm and munge")
class SlurmProviderTest(unittest.TestCase):
    def test_a_pending_trial_gets_an_agent_job_that_is_cancelled_when_idle(self):
        slurm = SlurmCluster().start()
        # sbatch, squeue and scancel run with the master's environment, which names this Slurm.
        os.environ["SLURM_CONF"] = slurm.conf
        try:
            c = Cluster(agents=0, master_config=pool_config(f"""type = "slurm"
max_instances = 1
instance_slots = 1
max_idle_agent_period = "3s"
partition = "{slurm.partition}"
time_limit = "30:00"
""")).start()
            try:
                exp = c.submit(search(trials=1, batches=40))
                jobs = wait_for(lambda: squeue(slurm), 30, "the agent's Slurm job")
                (instance,) = provisioner(c)["instances"]
                self.assertEqual(jobs, [instance["id"]])  # the job is named after its instance
                c.wait_experiment(exp, DONE, timeout=180)
                self.assertEqual(c.experiment(exp)["experiment"]["state"], "STATE_COMPLETED")
                logs = c.trial_logs(c.first_trial(exp))
                self.assertTrue(any(f"placed on {instance['id']}" in line for line in logs), logs)
                wait_for(lambda: not squeue(slurm) and not provisioner(c)["instances"], 60,
                         "the idle agent's job to be cancelled")
                self.assertEqual(int(provisioner(c)["launched"]), 1)
            finally:
                c.stop()
        finally:
            del os.environ["SLURM_CONF"]
            slurm.stop()


def squeue(slurm):
    """The names of the jobs Slurm has, running or waiting."""
    out = subprocess.run(["squeue", "--noheader", "--format=%j"], env=slurm.env, capture_output=True, text=True)
    return out.stdout.split()


class ConfigTest(unittest.TestCase):
    def test_bad_provider_keys_are_refused_with_a_sentence(self):
        for provider, words in [
            ('type = "aws"', "use type = \"command\""),
            ('type = "process"\nmin_instances = 4\nmax_instances = 2', "must not exceed max_instances"),
            ('type = "command"\nlaunch = "true"\nlist = "true"', "terminate"),
            ('type = "process"\npartition = "gpu"', "applies only to type = \"slurm\""),
            ('type = "process"\nagent_docker_image = "x"', "without Docker"),
            ('type = "process"\nmaster_url = "10.0.0.1:8090"', "applies to the command and slurm providers"),
        ]:
            root = tempfile.mkdtemp(prefix="det-prov-config-")
            path = os.path.join(root, "master.toml")
            with open(path, "w") as f:
                f.write(pool_config(provider))
            r = subprocess.run([os.path.join(BIN, "det-node"), "--role=master",
                                "--config", path, "--data-dir", os.path.join(root, "data")],
                               capture_output=True, text=True, timeout=60)
            subprocess.run(["rm", "-rf", root], check=False)
            self.assertNotEqual(r.returncode, 0, provider)
            self.assertIn("resource_pools[0].provider", r.stderr, provider)
            self.assertIn(words, r.stderr, provider)


if __name__ == "__main__":
    unittest.main(verbosity=2)
