#!/usr/bin/env python3
"""Opens megasim HTML reports in headless Chromium with the network disabled and checks them.

For each page: no console error, no uncaught exception, no request leaving the file (every
script and style must be inlined), the page's script finished (body[data-rendered]), the page
drew as many charts as it announces (body[data-charts], at least one), and every chart element
holds a canvas with painted pixels or an SVG with shapes. A full-page screenshot is saved.

Chromium is driven over the DevTools protocol on a pipe (--remote-debugging-pipe: NUL-ended
JSON messages on file descriptors 3 and 4), so nothing beyond Python and Chromium is needed.

  check_page.py [--chromium PATH] [--screenshots DIR] PAGE.html ...
  check_page.py --self-test DIR   # a broken page must fail, a good one pass
Exit 0: every page passed; 1: a page failed; 77: Chromium is not installed (skip).
"""
import argparse
import base64
import fcntl
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

TIMEOUT_S = 60

# Every chart element: painted canvas pixels or SVG shapes; returns a list of problems.
CHECK_CHARTS = r"""
(() => {
  const problems = [];
  const charts = [...document.querySelectorAll('.chart')];
  const announced = Number(document.body.dataset.charts || 0);
  if (announced < 1) problems.push('the page announced no chart');
  if (charts.length !== announced)
    problems.push(`${charts.length} chart elements, ${announced} announced`);
  charts.forEach((c, i) => {
    const title = c.closest('section')?.querySelector('h2')?.textContent || `chart ${i}`;
    const shapes = c.querySelectorAll('svg path, svg rect, svg circle, svg text').length;
    let painted = 0;
    for (const canvas of c.querySelectorAll('canvas')) {
      if (!canvas.width || !canvas.height) continue;
      const px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
      for (let k = 3; k < px.length; k += 4) if (px[k] !== 0) painted++;
    }
    if (!shapes && painted < 100) problems.push(`"${title}": nothing drawn (${painted} pixels)`);
  });
  // A stacked memory chart's bars add up to each stage's total_gib (the optimizer step's fp32
  // gradient copy was left off the stack until 2026-12-07, a bar short of the total).
  const tag = document.getElementById('megasim-data');
  const stages = tag ? (JSON.parse(tag.textContent).memory_per_stage || []) : [];
  for (const div of charts) {
    const c = typeof echarts === 'undefined' ? null : echarts.getInstanceByDom(div);
    const stack = c ? (c.getOption().series || []).filter((s) => s.stack === 'memory') : [];
    if (!stack.length) continue;
    stages.forEach((st, k) => {
      const sum = stack.reduce((a, s) => a + Number(s.data[k]), 0);
      if (Math.abs(sum - st.total_gib) > 1e-6 * Math.max(1, st.total_gib))
        problems.push(`memory chart: stage ${st.stage}'s bars add up to ${sum} GiB, not its total ${st.total_gib}`);
    });
  }
  return problems;
})()
"""

# Every chart's tooltip shown for the first points of every series: a user's text (scenario
# names, --vary values) that reached a tooltip as markup sets window.__megasim_injected (the
# compare page of report_pages.py names a variant with such markup). Read after a pause, since
# an <img> fails to load asynchronously.
SHOW_TOOLTIPS = r"""
(() => {
  let shown = 0;
  for (const div of document.querySelectorAll('.chart')) {
    const c = echarts.getInstanceByDom(div);
    if (!c) continue;
    (c.getOption().series || []).forEach((s, i) => {
      const n = Array.isArray(s.data) ? Math.min(s.data.length, 4) : 0;
      for (let k = 0; k < n; k++) {
        c.dispatchAction({ type: 'showTip', seriesIndex: i, dataIndex: k });
        shown++;
      }
    });
  }
  return shown;
})()
"""


class Browser:
    """One headless Chromium spoken to over the DevTools pipe."""

    def __init__(self, chromium, profile):
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Above 10 so that placing them on 3 and 4 in the child cannot clobber one another.
        a = fcntl.fcntl(to_chrome_r, fcntl.F_DUPFD, 10)
        b = fcntl.fcntl(from_chrome_w, fcntl.F_DUPFD, 10)

        def child():
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                "--remote-debugging-pipe", f"--user-data-dir={profile}", "--disable-extensions",
                "--disable-background-networking", "--proxy-server=127.0.0.1:9",
                "--host-resolver-rules=MAP * ~NOTFOUND", "--hide-scrollbars", "about:blank"]
        # Its own process group, so that closing it reaches the renderer and utility processes
        # too, which otherwise may still write to the profile folder as it is removed.
        self.proc = subprocess.Popen(args, preexec_fn=child, close_fds=False, start_new_session=True,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in (to_chrome_r, from_chrome_w, a, b):
            os.close(fd)
        self.next_id = 0
        self.buffer = b""
        self.events = []

    def close(self):
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()
        os.close(self.to_chrome)
        os.close(self.from_chrome)

    def _read(self, deadline):
        while b"\0" not in self.buffer:
            if time.monotonic() > deadline:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method, deadline):
        while True:
            for i, e in enumerate(self.events):
                if e.get("method") == method:
                    return self.events.pop(i)
            self.events.append(self._read(deadline))


def problems_of_events(events):
    problems = []
    for e in events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.exceptionThrown":
            d = p["exceptionDetails"]
            problems.append("uncaught: " + d.get("exception", {}).get("description", d["text"]))
        elif m == "Runtime.consoleAPICalled" and p["type"] in ("error", "assert"):
            problems.append("console error: " + " ".join(
                str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            problems.append("browser error: " + p["entry"]["text"])
        elif m == "Network.requestWillBeSent":
            url = p["request"]["url"]
            if not url.startswith(("file:", "data:", "blob:", "about:")):
                problems.append("network request: " + url[:120])
    return problems


def check(browser, page, screenshot):
    """The problems of one page (empty when it passes); saves its screenshot."""
    target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
    s = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        browser.send(f"{domain}.enable", session=s)
    browser.send("Network.emulateNetworkConditions", {"offline": True, "latency": 0,
                 "downloadThroughput": -1, "uploadThroughput": -1}, session=s)
    browser.send("Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 900,
                 "deviceScaleFactor": 1, "mobile": False}, session=s)
    browser.events.clear()
    browser.send("Page.navigate", {"url": pathlib.Path(page).resolve().as_uri()}, session=s)
    browser.wait_event("Page.loadEventFired", time.monotonic() + TIMEOUT_S)
    rendered = browser.send("Runtime.evaluate", {
        "expression": "document.body && document.body.dataset.rendered === 'true'",
        "returnByValue": True}, session=s)["result"].get("value")
    problems = [] if rendered else ["the page's script did not finish (no body[data-rendered])"]
    result = browser.send("Runtime.evaluate", {"expression": CHECK_CHARTS, "returnByValue": True},
                          session=s)
    value = result["result"].get("value")
    problems += ["chart check failed: " + json.dumps(result)] if value is None else value
    browser.send("Runtime.evaluate", {"expression": SHOW_TOOLTIPS, "returnByValue": True},
                 session=s)
    time.sleep(0.5)
    injected = browser.send("Runtime.evaluate", {"expression": "window.__megasim_injected === 1",
                            "returnByValue": True}, session=s)["result"].get("value")
    if injected:
        problems.append("a tooltip ran markup from the page's data (a name not escaped)")
    if screenshot:
        size = browser.send("Page.getLayoutMetrics", session=s)["cssContentSize"]
        shot = browser.send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                            "clip": {"x": 0, "y": 0, "width": size["width"],
                                     "height": size["height"], "scale": 1}}, session=s)
        pathlib.Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
    # Events that arrived while evaluating count too.
    problems += problems_of_events(browser.events)
    browser.send("Target.closeTarget", {"targetId": target})
    return problems


def run(chromium, pages, shots):
    failed = 0
    # A child Chromium leaves behind as it dies must not fail the check: the pages decide it.
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        browser = Browser(chromium, profile)
        try:
            for page in pages:
                shot = shots / (pathlib.Path(page).stem + ".png") if shots else None
                problems = check(browser, page, shot)
                status = "FAIL" if problems else "ok"
                print(f"{status} {page}" + (f" (screenshot {shot})" if shot else ""))
                for p in problems:
                    print("    " + p)
                failed += bool(problems)
        finally:
            browser.close()
    return failed


BROKEN = """<!doctype html><html><body><section><h2>empty</h2><div class="chart"
style="height:100px"><canvas width="100" height="100"></canvas></div></section>
<img src="http://example.invalid/x.png"><script>console.error('boom');
document.body.dataset.charts = '1'; document.body.dataset.rendered = 'true';</script></body></html>
"""
GOOD = """<!doctype html><html><body><section><h2>drawn</h2><div class="chart"><canvas width="50"
height="50"></canvas></div></section><script>const c = document.querySelector('canvas');
c.getContext('2d').fillRect(0, 0, 50, 50);
document.body.dataset.charts = '1'; document.body.dataset.rendered = 'true';</script></body></html>
"""


def self_test(chromium, folder):
    """The checker must fail a page with a console error, an outside request and an empty
    canvas, naming all three, and pass a page that draws."""
    folder = pathlib.Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "broken.html").write_text(BROKEN)
    (folder / "good.html").write_text(GOOD)
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as profile:
        browser = Browser(chromium, profile)
        try:
            bad = check(browser, folder / "broken.html", None)
            good = check(browser, folder / "good.html", None)
        finally:
            browser.close()
    wanted = ["console error: boom", "network request: http://example.invalid", "nothing drawn"]
    missing = [w for w in wanted if not any(p.startswith(w) or w in p for p in bad)]
    if missing or good:
        print("self-test FAILED: broken page gave", bad, "; good page gave", good)
        return 1
    print("self-test ok: the broken page failed for", len(bad), "reasons; the good one passed")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chromium", default="chromium")
    ap.add_argument("--screenshots", type=pathlib.Path)
    ap.add_argument("--self-test", metavar="DIR")
    ap.add_argument("pages", nargs="*")
    a = ap.parse_args()
    chromium = shutil.which(a.chromium)
    if not chromium:
        print(f"SKIP: {a.chromium} is not installed (scripts/install-deps.sh installs Debian's "
              "chromium); the HTML reports were not opened in a browser")
        return 77
    if a.self_test:
        return self_test(chromium, a.self_test)
    if a.screenshots:
        a.screenshots.mkdir(parents=True, exist_ok=True)
    return 1 if run(chromium, a.pages, a.screenshots) else 0


if __name__ == "__main__":
    sys.exit(main())
