#!/usr/bin/env python3
"""det-node's log: the master's [log] section and the agent's --log-level and --log-format. In
JSON, every line is an object with its time, level, component and message; a level leaves out
what is less severe; a bad level is refused by name."""

import json
import os
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from cluster import BIN, Cluster, simulated_config, wait_for  # noqa: E402


def json_lines(c, name):
    """Every line of a process's log as JSON (one that is not fails the test here)."""
    with open(os.path.join(c.root, f"{name}.log"), errors="replace") as f:
        return [json.loads(line) for line in f.read().splitlines() if line.strip()]


class LoggingTest(unittest.TestCase):
    def test_json_lines_by_component_and_level(self):
        c = Cluster(agents=1, slots="cpu:1", master_config='[log]\nlevel = "info"\nformat = "json"\n',
                    agent_args=("--log-level", "warn", "--log-format", "json")).start()
        try:
            exp_id = c.submit(simulated_config("logged", batches=5))
            c.wait_experiment(exp_id, {"STATE_COMPLETED"}, timeout=120)
            master = json_lines(c, "master")
            for line in master:
                self.assertEqual(set(line), {"time", "level", "component", "message"}, line)
                self.assertRegex(line["time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
            said = {(line["component"], line["message"].split(" ")[0]) for line in master}
            self.assertIn(("master", "serving"), said)
            self.assertIn(("storage", "applied"), said)  # migrations
            # The agent logs warnings only: its registration (info) is not there; losing the master is.
            self.assertEqual(json_lines(c, "agent-0"), [])
            c.stop_master()
            lost = wait_for(lambda: [line for line in json_lines(c, "agent-0") if "lost the master" in line["message"]],
                            30, "the agent to log that it lost the master")
            self.assertEqual((lost[0]["level"], lost[0]["component"]), ("warning", "agent"))
            self.assertTrue(all(line["level"] in ("warning", "error") for line in json_lines(c, "agent-0")))
        finally:
            c.stop()

    def test_a_bad_level_is_refused_by_name(self):
        out = subprocess.run([os.path.join(BIN, "det-node"), "--role=agent", "--log-level", "loud"],
                             capture_output=True, text=True, timeout=30)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("--log-level: expected debug, info, warn or error", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
