"""The explorer and the book as a person sees them: Debian's chromium driven by Playwright.

The explorer is served by Voila (notebooks/explore.ipynb) on a free local port: the test picks two algorithms, runs
3 rounds on digits, waits for the curves, then enters a bad learning rate and reads its error. The book is built
(``fedkit.book.build``) and every page is opened: it loads, no image is broken, no internal link is dead.

Skipped, with the reason, only where no chromium is found (``apt-get install chromium``; or set $CHROMIUM to the
browser's path). One screenshot of each goes to the test's folder, and to $FEDKIT_SCREENSHOTS when it is set (the
committed docs/screenshots/ are made with FEDKIT_SCREENSHOTS=docs/screenshots).
"""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urldefrag, urljoin, urlparse

import pytest

ROOT = Path(__file__).resolve().parents[1]
# $CHROMIUM, when set, is the only candidate (CHROMIUM=/nonexistent shows the skip)
CANDIDATES = ([os.environ["CHROMIUM"]] if os.environ.get("CHROMIUM") else
              [shutil.which("chromium"), shutil.which("chromium-browser"), "/usr/bin/chromium"])
CHROMIUM = next((p for p in CANDIDATES if p and Path(p).is_file()), None)

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(CHROMIUM is None, reason=f"no chromium found (looked for "
                                 f"{', '.join(p for p in CANDIDATES if p)}; apt-get install chromium, or set "
                                 f"$CHROMIUM to its path): the browser tests cannot run")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def save_screenshot(page, tmp_path: Path, name: str) -> None:
    page.screenshot(path=str(tmp_path / name), full_page=False)
    target = os.environ.get("FEDKIT_SCREENSHOTS")
    if target:
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy2(tmp_path / name, Path(target) / name)


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install "
                                                                  "playwright; it is in the dev extra)")
    with sync_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def voila(tmp_path_factory):
    """The explorer notebook served by Voila; yields its URL."""
    pytest.importorskip("voila", reason="voila is not installed (pip install -e '.[explore]')")
    port = free_port()
    log = tmp_path_factory.mktemp("voila") / "voila.log"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "FEDKIT_CACHE": str(tmp_path_factory.mktemp("runs")), "MPLBACKEND": "Agg"}
    env.pop("FEDKIT_SCALE", None)  # the notebook then waits for a click (no autorun)
    with open(log, "w") as out:
        server = subprocess.Popen([sys.executable, "-m", "voila", "notebooks/explore.ipynb", "--no-browser",
                                   f"--port={port}", "--Voila.ip=127.0.0.1", "--VoilaExecutor.startup_timeout=300",
                                   "--VoilaConfiguration.show_tracebacks=True"],  # a failing cell shows why
                                  cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/"
    try:
        deadline = time.time() + 120  # a loaded machine starts it slowly
        while True:
            try:
                urllib.request.urlopen(url + "voila/static/", timeout=2)
                break
            except urllib.error.HTTPError:  # it answers: it is up
                break
            except OSError:
                if server.poll() is not None or time.time() > deadline:
                    pytest.fail(f"Voila did not start on port {port}:\n{log.read_text()[-3000:]}")
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


def test_explorer_runs_two_methods_and_shows_a_bad_value(browser, voila, tmp_path):
    page = browser.new_page(viewport={"width": 1200, "height": 950})
    page.set_default_timeout(120_000)  # generous: a loaded 2-core machine is slow, a passing run is not
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(voila, timeout=300_000)
    run = page.locator(".fedkit-run")
    run.wait_for(timeout=300_000)  # Voila has executed the notebook: the panel is there
    # two algorithms: fedavg (preset) and fedprox instead of the preset scaffold
    page.locator(".fedkit-use-scaffold input").uncheck()
    page.locator(".fedkit-use-fedprox input").check()
    rounds = page.locator(".fedkit-rounds input")
    rounds.fill("3")
    rounds.press("Enter")
    page.wait_for_timeout(300)  # the value reaches the kernel before the click
    run.click()
    status = page.locator(".fedkit-status")
    page.wait_for_function("document.querySelector('.fedkit-status').innerText.startsWith('done')",
                           timeout=300_000)
    assert status.inner_text() == "done: 6/6 rounds"
    plot = page.locator("img.fedkit-plot")
    assert plot.evaluate("img => img.complete && img.naturalWidth > 400 && img.naturalHeight > 200")
    table = page.locator(".fedkit-table").inner_text()
    assert "fedavg" in table and "fedprox mu=0.1" in table and "scaffold" not in table
    assert page.locator(".fedkit-error").inner_text().strip() == ""
    save_screenshot(page, tmp_path, "explorer.png")
    # a bad value: its ConfigError text, no traceback
    lr = page.locator(".fedkit-lr input")
    lr.fill("-1")
    lr.press("Enter")
    page.wait_for_timeout(300)
    run.click()
    error = page.locator(".fedkit-error")
    page.wait_for_function("document.querySelector('.fedkit-error').innerText.includes('lr must')", timeout=120_000)
    assert error.inner_text().strip() == "lr must be a finite number > 0, got -1.0"
    assert "Traceback" not in page.content()
    # Stop: a long run ends after the round under way, and says so
    lr.fill("0.1")
    lr.press("Enter")
    rounds.fill("500")
    rounds.press("Enter")
    page.wait_for_timeout(300)
    run.click()
    page.wait_for_function("document.querySelector('.fedkit-status').innerText.startsWith('round')", timeout=120_000)
    page.locator(".fedkit-stop").click()
    page.wait_for_function("document.querySelector('.fedkit-status').innerText.startsWith('stopped')",
                           timeout=120_000)
    assert error.inner_text().strip() == ""
    assert not errors, errors
    page.close()


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book, built from this checkout and served over HTTP; yields (url, Book)."""
    pytest.importorskip("mkdocs_jupyter", reason="mkdocs-jupyter is not installed (pip install -e '.[book]')")
    from fedkit.book import build

    site = tmp_path_factory.mktemp("book") / "site"
    built = build(site, root=ROOT)
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}/", built
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def test_book_pages_load_with_their_images_and_links(browser, book, tmp_path):
    url, built = book
    notebooks = sorted(str(p.relative_to(ROOT / "notebooks").with_suffix(".html"))
                       for p in (ROOT / "notebooks").glob("*/*.ipynb") if not p.parent.name.startswith("."))
    assert set(notebooks) <= set(built.pages), "every notebook under notebooks/<folder>/ has a page"
    assert {"index.html", "concepts.html", "reproduction.html"} <= set(built.pages)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_default_timeout(120_000)
    checked, dead, broken, images = set(), [], [], 0
    for path in built.pages:
        if path in ("404.html",) or path.startswith("search"):
            continue
        response = page.goto(url + path, wait_until="load")
        assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
        found = page.evaluate("""() => [...document.images].map(i => [i.currentSrc || i.src,
                                                                        i.complete && i.naturalWidth > 0])""")
        images += len(found)
        broken += [f"{path}: {src}" for src, ok in found if not ok]
        for href in page.evaluate("() => [...document.querySelectorAll('a[href]')].map(a => a.href)"):
            target = urldefrag(urljoin(url + path, href))[0]
            if urlparse(target).netloc != urlparse(url).netloc or target in checked:
                continue
            checked.add(target)
            status = page.request.get(target).status
            if status >= 400:
                dead.append(f"{path} -> {target} ({status})")
    assert not broken, f"broken images: {broken}"
    assert not dead, f"dead internal links: {dead}"
    assert images >= len(list((ROOT / "figures").glob("*/*.png"))), "the committed figures appear in the book"
    page.goto(url + "taco/fig7_gamma_sensitivity.html")
    page.locator("img[src*='fig7_gamma_sensitivity.png']").first.scroll_into_view_if_needed()
    page.mouse.wheel(0, -120)  # the caption and the cell above in view; the header settles
    page.wait_for_timeout(800)
    save_screenshot(page, tmp_path, "book.png")
    page.close()
