"""The dashboard and the timeline in a real browser: headless Chromium driven by
Selenium (scripts/install-deps.sh --test-browser). Skipped, saying so, when the
browser group is not installed. The machine's network is closed: Chromium is
started without background networking, and the page fetches only from the
launcher."""
from __future__ import annotations

import json
import os
import pathlib
import shutil
import signal
import subprocess
import tempfile

import pytest

from jobs import BUILD, FLOTILLA, Job

try:
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError:  # pragma: no cover - depends on the machine
    webdriver = None

CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
SHOTS = BUILD / "observe"

pytestmark = pytest.mark.skipif(
    webdriver is None or shutil.which("chromium") is None or not os.path.exists(CHROMEDRIVER),
    reason="headless Chromium is not installed: run scripts/install-deps.sh --test-browser "
           "(chromium, chromium-driver, python3-selenium)")


@pytest.fixture
def browser():
    profile = tempfile.mkdtemp(prefix="flotilla-chromium-")
    options = Options()
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                 "--no-first-run", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--window-size=1500,1300",
                 f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_script_timeout(120)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def row_state(driver, label: str):
    return driver.execute_script(
        "const r = document.querySelector(`tr[data-label='${arguments[0]}']`);"
        "return r ? [r.dataset.state, r.querySelector('.state').textContent] : null;", label)


def chart_points(driver, chart: str) -> int:
    return driver.execute_script(
        "const c = window.flotilla.charts[arguments[0]];"
        "return Math.max(0, ...c.data.datasets.map(d => d.data.filter(v => v !== null).length));",
        chart)


def test_dashboard_of_a_two_rank_job(tmp_path: pathlib.Path, browser) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    job = Job(tmp_path, ["--devices", "0,1", "--dashboard", "127.0.0.1:0",
                         "--dashboard_linger", "120"],
              [str(BUILD / "bin" / "train_with_fleet"), "--steps", "100000", "--hidden", "256"])
    try:
        browser.get(job.login_url())  # sets the token's cookie, then the page
        wait = WebDriverWait(browser, 90, poll_frequency=0.25)
        for label in ("rank 0", "rank 1"):
            wait.until(lambda d: (row_state(d, label) or [None])[0] in ("running", "waiting"))
        wait.until(lambda d: chart_points(d, "loss") >= 5 and chart_points(d, "samples") >= 5)
        assert chart_points(browser, "split") >= 5
        browser.save_screenshot(str(SHOTS / "dashboard_running.png"))

        os.kill(job.pid("rank 1"), signal.SIGKILL)
        wait.until(lambda d: (row_state(d, "rank 1") or [None])[0] == "dead")
        state, text = row_state(browser, "rank 1")
        assert "killed by signal SIGKILL" in text, text
        wait.until(lambda d: "rank 1 failed: killed by signal SIGKILL" in
                   d.find_element("id", "diagnosis").text)
        assert row_state(browser, "rank 0")[0] != "dead"
        tail = browser.execute_script(
            "return document.querySelector(`tr[data-label='rank 0'] pre.tail`).textContent")
        assert "step" in tail or "loss" in tail or tail.strip(), tail
        browser.save_screenshot(str(SHOTS / "dashboard.png"))
        link = browser.execute_script(
            "return document.querySelector(`tr[data-label='rank 0'] a.loglink`).href")
        browser.get(link)
        assert "flotilla launch: rank 0" in browser.find_element("tag name", "body").text
    finally:
        job.stop()


def test_timeline_loads_in_chromiums_trace_engine(tmp_path: pathlib.Path, browser) -> None:
    out = tmp_path / "job.json"
    proc = subprocess.run(
        [str(FLOTILLA), "launch", "--log_dir", str(tmp_path / "log"), "--timeline", str(out),
         "--quiet", "--devices", "0,1", str(BUILD / "bin" / "train_with_fleet"), "--steps", "8"],
        cwd=tmp_path, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    events = json.loads(out.read_text())["traceEvents"]
    linked = len({e["id"] for e in events if e["ph"] == "s"})
    browser.get("devtools://devtools/bundled/devtools_app.html")
    parsed = browser.execute_async_script("""
        const done = arguments[arguments.length - 1];
        (async () => {
          const m = await import('devtools://devtools/bundled/models/trace/trace.js');
          const model = m.TraceModel.Model.createWithAllHandlers();
          await model.parse(arguments[0]);
          const data = model.parsedTrace(0).data;
          return {flows: data.Flows.flows.length,
                  threads: [...data.Renderer.processes.entries()].map(([p, v]) => [p, v.threads.size])};
        })().then(done, e => done({error: String(e)}));
    """, events)
    assert "error" not in parsed, parsed
    assert parsed["flows"] == linked > 0
    threads = dict(parsed["threads"])
    # rank 0 and rank 1: the executor and the communicators' threads
    assert threads[1000] >= 2 and threads[1001] >= 2, threads
