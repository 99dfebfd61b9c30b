#!/usr/bin/python3
"""The web UI in a real browser (Debian's Chromium through Selenium) against a real cluster
running a search: log in, the experiments page lists it, its learning curve has a series per
trial and takes new validation points without a reload, parallel coordinates draw a line per
trial, the owner kills it from the page while another user is refused with the error shown, the
trial page tails new log lines, unknown ids and expired sessions land where they should. A
screenshot of each page goes to the build directory. Runs under /usr/bin/python3 (Selenium)."""

import json
import os
import sys
import time
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

SHOTS = os.environ.get("DET_SCREENSHOT_DIR", os.path.join(os.environ.get("DET_BIN_DIR", "."), "..", "webui-screenshots"))

SEARCH = """
name = "webui search"
entrypoint = "builtin:simulate"
min_validation_period = { batches = 20 }
min_checkpoint_period = { batches = 200 }
scheduling_unit = 10
[hyperparameters]
x = { type = "double", minval = 0.0, maxval = 1.0 }
optimizer = { type = "categorical", vals = ["adam", "sgd"] }
[searcher]
name = "random"
metric = "validation_loss"
max_trials = 2
max_length = { batches = 100000 }
[data]
seconds_per_batch = 0.02
[reproducibility]
experiment_seed = 3
"""


class WebUiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        os.makedirs(SHOTS, exist_ok=True)
        cls.cluster = Cluster(agents=1, slots="cpu:2").start()
        c = cls.cluster
        c.post("/api/v1/users", {"username": "bob", "password": "bob-password-1"})
        cls.exp = c.submit(SEARCH)
        wait_for(lambda: len([t for t in c.experiment(cls.exp)["trials"] if t["state"] == "STATE_RUNNING"]) == 2, 60,
                 "both trials to run")
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--disable-dev-shm-usage"):
            options.add_argument(arg)
        options.binary_location = "/usr/bin/chromium"
        cls.driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)

    @classmethod
    def tearDownClass(cls):
        try:
            cls.driver.quit()
        finally:
            cls.cluster.stop()

    # -- helpers --------------------------------------------------------------

    def open(self, path):
        self.driver.get(self.cluster.url + path)

    def find(self, css, timeout=15):
        return wait_for(lambda: (self.driver.find_elements(By.CSS_SELECTOR, css) or [None])[0], timeout, css)

    def text_of(self, css):
        """The text of the element `css` finds; "" while the page redraws it (the element found
        was replaced before its text was read), so that a wait_for polls again."""
        try:
            return self.find(css).text
        except StaleElementReferenceException:
            return ""

    def login(self, user, password):
        self.open("/login")
        self.find("#username").send_keys(user)
        self.find("#password").send_keys(password)
        self.find("#login").click()
        wait_for(lambda: self.driver.current_url.endswith("/experiments"), 15, "the experiments page")

    def signed_in(self, user="admin", password=None):
        """The browser holds a session of `user`, as the login page leaves it (its HttpOnly cookie)."""
        self.hold_session(self.cluster.login(user, password or self.cluster.admin_password))

    def hold_session(self, token):
        self.open("/login")
        self.driver.delete_cookie("det_session")
        self.driver.add_cookie({"name": "det_session", "value": token, "path": "/", "httpOnly": True,
                                "sameSite": "Strict"})

    def shot(self, name):
        self.driver.save_screenshot(os.path.join(SHOTS, f"{name}.png"))

    def chart_points(self, css):
        return int(self.find(css).get_attribute("data-points") or 0)

    # -- tests, in the order a person would go --------------------------------

    def test_1_login_lists_the_running_search(self):
        self.login("admin", self.cluster.admin_password)
        row = self.find(f'tr[data-experiment="{self.exp}"]')
        wait_for(lambda: "RUNNING" in row.text or "ACTIVE" in row.text, 15, "the search's state")
        self.assertIn("webui search", row.text)
        self.assertIn("admin", row.text)
        self.shot("experiments")

    def test_2_learning_curve_streams_new_points_and_parallel_coordinates(self):
        self.signed_in()
        self.open(f"/experiments/{self.exp}")
        curve = "#learning-curve"
        wait_for(lambda: self.find(curve).get_attribute("data-series") == "2", 20, "a series per trial")
        before = self.chart_points(curve)
        wait_for(lambda: self.chart_points(curve) > before, 10, "a new validation point without a reload")
        wait_for(lambda: self.find("#parallel-coordinates").get_attribute("data-lines") == "2", 20, "a line per trial")
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#scatters .scatter")), 2)  # x and optimizer
        self.shot("experiment")
        self.find("#tab-trials").click()
        self.assertEqual(len(self.driver.find_elements(By.CSS_SELECTOR, "#trials tr[data-trial]")), 2)
        self.shot("experiment-trials")

    def test_3_trial_page_tails_its_logs_and_draws_its_metrics(self):
        self.signed_in()
        trial = self.cluster.experiment(self.exp)["trials"][0]["id"]
        self.open(f"/trials/{trial}")
        wait_for(lambda: self.chart_points("#chart-validation") > 0, 20, "validation points")
        first = len(self.driver.find_elements(By.CSS_SELECTOR, "#logs div"))
        self.assertGreater(first, 0)
        wait_for(lambda: len(self.driver.find_elements(By.CSS_SELECTOR, "#logs div")) > first, 20, "new log lines")
        self.shot("trial")

    def test_4_other_pages_draw(self):
        self.signed_in()
        for path, css in (("/cluster", '#agents tr[data-agent="agent-0"]'), ("/tasks", "#tasks table"),
                          ("/models", "table")):
            self.open(path)
            self.find(css)
            self.shot(path.strip("/"))
        self.open("/experiments/987654")
        self.assertIn("does not exist", self.find("#not-found").text)
        self.open("/trials/987654")
        self.assertIn("does not exist", self.find("#not-found").text)

    def test_5_another_user_cannot_kill_it_and_its_owner_can(self):
        self.login("bob", "bob-password-1")
        self.open(f"/experiments/{self.exp}")
        self.find("#action-kill").click()
        error = wait_for(lambda: self.text_of("#action-error"), 10, "the refusal")
        self.assertIn("experiment", error)
        self.assertNotIn(self.cluster.experiment(self.exp)["experiment"]["state"], ("STATE_CANCELED", "STATE_STOPPING_CANCELED"))
        self.shot("kill-refused")
        self.login("admin", self.cluster.admin_password)
        self.open(f"/experiments/{self.exp}")
        self.find("#action-kill").click()
        self.cluster.wait_experiment(self.exp, {"STATE_CANCELED"}, timeout=60)
        wait_for(lambda: "CANCELED" in self.text_of("h1"), 15, "the page to show it canceled")

    def test_6_an_expired_session_goes_to_the_login_page(self):
        self.open("/experiments")
        self.hold_session("expired-or-revoked")
        self.open(f"/experiments/{self.exp}")
        wait_for(lambda: "/login" in self.driver.current_url, 15, "the login page")
        self.assertIn("next=", self.driver.current_url)


if __name__ == "__main__":
    unittest.main()
