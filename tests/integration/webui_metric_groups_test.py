#!/usr/bin/python3
"""The trial page of the web UI (headless Chromium through Selenium) shows a Core API script's
metric group named "eval % top/1 & f1+ #2" as a panel of its own, with its points drawn (its name
encoded in the URLs the page asks), and its names as text: "<b>rate</b>" stays text, no element.
The script's alert is a log line of the stream "alert". Runs under /usr/bin/python3 (Selenium)."""

import os
import sys
import unittest

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.dirname(__file__))
from cluster import Cluster, wait_for  # noqa: E402

PROGRAM = os.path.join(os.path.dirname(__file__), "../data/programs/determined_sdk")
GROUP = "eval % top/1 & f1+ #2"
CONFIG = """
name = "metric groups"
entrypoint = "python3 train.py"
max_restarts = 0
[searcher]
name = "single"
metric = "validation_loss"
max_length = { batches = 3 }
"""


class WebUiMetricGroupsTest(unittest.TestCase):
    def test_the_trial_page_draws_an_odd_metric_group_and_shows_the_alert(self):
        c = Cluster(agents=1, slots="cpu:1").start()
        options = webdriver.ChromeOptions()
        for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000", "--disable-dev-shm-usage"):
            options.add_argument(arg)
        options.binary_location = "/usr/bin/chromium"
        driver = None
        try:
            exp = c.submit_directory(CONFIG, PROGRAM)
            done = c.wait_experiment(exp, {"STATE_COMPLETED", "STATE_ERROR"}, timeout=120)
            trial = done["trials"][0]["id"]
            self.assertEqual(done["experiment"]["state"], "STATE_COMPLETED", c.trial_logs(trial)[-30:])
            driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
            driver.get(c.url + "/login")
            # The session as the login page leaves it: its HttpOnly cookie.
            driver.add_cookie({"name": "det_session", "value": c.token, "path": "/", "httpOnly": True,
                               "sameSite": "Strict"})
            driver.get(f"{c.url}/trials/{trial}")

            def panel():
                found = [el for el in driver.find_elements(By.CSS_SELECTOR, "#metric-groups .chart")
                         if el.get_attribute("data-group") == GROUP]
                return found[0] if found and int(found[0].get_attribute("data-points") or 0) > 0 else None

            chart = wait_for(panel, 20, "the group's panel with points")
            self.assertEqual(int(chart.get_attribute("data-points")), 3)
            self.assertIn(GROUP, chart.text)  # its title, as text
            picker = Select(driver.find_element(By.CSS_SELECTOR, "#metric-groups select"))
            self.assertEqual(sorted(o.text for o in picker.options), ["<b>rate</b>", "top 1 %"])
            self.assertEqual(driver.find_elements(By.CSS_SELECTOR, "#metric-groups b"), [])
            picker.select_by_visible_text("top 1 %")
            wait_for(lambda: int(panel().get_attribute("data-points") or 0) == 3 if panel() else False, 10,
                     "the other metric's points")
            alert = wait_for(lambda: driver.find_elements(By.CSS_SELECTOR, "#logs .log-alert"), 20, "the alert line")
            self.assertEqual([a.text for a in alert], ["WARNING: loss <fell>: to 0.3333333333333333 & below"])
        finally:
            if driver:
                driver.quit()
            c.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
