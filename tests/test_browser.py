"""The explorer and the book as a person sees them: Debian's chromium driven by Playwright.

The explorer is served by Voila (notebooks/explore.ipynb) on a free local port and seen at 1280 x 800: no broken
image before a run, the model line of two data sets, the note when FedNova joins FedAvg; the test picks two
algorithms, runs 3 rounds on digits, waits for the curves (in view, the figure ``plot_figure`` draws, whole-number
round ticks), runs again from the cache, then enters bad values (rounds, the partition's parameter, the learning
rate) and reads each one-line error with the last run's curves and status gone, and stops a long run. The book is built
(``fedkit.book.build``) and every page is opened: it loads, no image is broken, no internal link is dead, a figure
links its full size, nothing is fetched from outside the site; the next links walk the navigation in order; every
lesson typesets all its math (no raw TeX left); the home page holds the syllabus and links every notebook; a
notebook's page links the committed .ipynb and its Binder launch, and shares one stylesheet; at 1280 x 800 the
reproduction summary comes first and no table column is cut off, the header row staying in view.

Skipped, with the reason, only where no chromium is found (``apt-get install chromium``; or set $CHROMIUM to the
browser's path). The screenshots go to the test's folder, and to $FEDKIT_SCREENSHOTS when it is set (the
committed docs/screenshots/ are made with FEDKIT_SCREENSHOTS=docs/screenshots).
"""
import os
import re
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
from typing import NamedTuple
from urllib.parse import urldefrag, urljoin, urlparse

import nbformat
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


class Served(NamedTuple):
    url: str
    cache: Path  # the server's run cache ($FEDKIT_CACHE)


@pytest.fixture(scope="module")
def voila(tmp_path_factory):
    """The explorer notebook served by Voila; yields its URL and run cache."""
    pytest.importorskip("voila", reason="voila is not installed (pip install -e '.[explore]')")
    port = free_port()
    log = tmp_path_factory.mktemp("voila") / "voila.log"
    cache = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "FEDKIT_CACHE": str(cache), "MPLBACKEND": "Agg"}
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
        yield Served(url, cache)
    finally:
        server.terminate()
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()


# images on the page that are laid out but show nothing: the browser's broken-image icon
BROKEN_IMAGES = """() => [...document.images].filter(i => i.getClientRects().length)
                          .filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.className || i.src)"""
# the bytes of the image an <img> shows (ipywidgets gives it a blob: URL)
IMAGE_BYTES = """async img => { const b = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
                                let s = ''; for (const x of b) s += String.fromCharCode(x); return btoa(s); }"""


def test_explorer_runs_two_methods_and_shows_a_bad_value(browser, voila, tmp_path):
    """At 1280 x 800: no broken image before the first run; the model line and the equal-by-construction note; the
    curves in view after a run, the very figure ``plot_figure`` draws (whole-number round ticks); a bad value leaves
    only its one-line error (old curves, table and cache status gone); Stop."""
    import base64

    from fedkit.explorer import Choice, Session, build_configs, describe_model, plot_figure, plot_png

    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(120_000)  # generous: a loaded 2-core machine is slow, a passing run is not
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(voila.url, timeout=300_000)
    run = page.locator(".fedkit-run")
    run.wait_for(timeout=300_000)  # Voila has executed the notebook: the panel is there
    status, error, plot = page.locator(".fedkit-status"), page.locator(".fedkit-error"), page.locator("img.fedkit-plot")
    assert page.evaluate(BROKEN_IMAGES) == [] and not plot.is_visible(), "no image (nor its broken icon) before a run"
    # the model line: what build_configs puts in the Config of the chosen data set
    for dataset, shown in (("mnist_5k", "cnn (SimpleCNN)"), ("digits", "mlp (FcNet, hidden=[64])")):
        page.locator(".fedkit-dataset select").select_option(dataset)
        cfg = build_configs(Choice(dataset=dataset))["fedavg"]
        assert describe_model(cfg.model, cfg.model_args) == shown
        page.wait_for_function("t => document.querySelector('.fedkit-model').innerText.includes(t)", arg=shown)
    # FedNova beside FedAvg, every client taking the same K local steps: the note says they are one method
    note = page.locator(".fedkit-note")
    page.locator(".fedkit-use-fednova input").check()
    page.wait_for_function("document.querySelector('.fedkit-note').innerText.includes('fednova')")
    assert "fedavg and fednova are one method by construction" in note.inner_text()
    assert "same K = 10 local steps" in note.inner_text()
    page.locator(".fedkit-use-fednova input").uncheck()
    page.wait_for_function("document.querySelector('.fedkit-note').innerText.trim() === ''")
    # two algorithms: fedavg (preset) and fedprox instead of the preset scaffold
    page.locator(".fedkit-use-scaffold input").uncheck()
    page.locator(".fedkit-use-fedprox input").check()
    rounds = page.locator(".fedkit-rounds input")
    rounds.fill("3")
    rounds.press("Enter")
    page.wait_for_timeout(300)  # the value reaches the kernel before the click
    run.click()
    page.wait_for_function("document.querySelector('.fedkit-status').innerText.startsWith('done')",
                           timeout=300_000)
    assert status.inner_text() == "done: 6/6 rounds"
    assert plot.evaluate("img => img.complete && img.naturalWidth > 400 && img.naturalHeight > 200")
    box = plot.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= 800, f"the curves are not all in view at 1280 x 800: {box}"
    # the image shown is plot_figure's for these runs (read back from the same cache), whose round ticks are whole
    configs = build_configs(Choice(algorithms={"fedavg": {}, "fedprox": {"mu": 0.1}}, rounds=3))
    curves = Session(configs, cache=voila.cache).run()  # all from the cache
    assert base64.b64decode(plot.evaluate(IMAGE_BYTES)) == plot_png(curves, 3)
    for ax in plot_figure(curves, 3).axes:
        assert list(ax.get_xticks()) == [0, 1, 2, 3]
    table = page.locator(".fedkit-table").inner_text()
    assert "fedavg" in table and "fedprox mu=0.1" in table and "scaffold" not in table
    assert error.inner_text().strip() == ""
    assert page.evaluate(BROKEN_IMAGES) == []
    save_screenshot(page, tmp_path, "explorer.png")
    # again: from the cache at once, and the status says so
    run.click()
    page.wait_for_function("document.querySelector('.fedkit-status').innerText.includes('from the cache')")
    assert status.inner_text() == "done: 6/6 rounds (2 from the cache)"

    def bad_value(field: str, value: str, message: str, good: str) -> None:
        """``value`` in ``field``, Run: its one-line message in the status and the error box, and nothing of the run
        before (curves, table, progress, cache status); then ``good`` back, and a run (from the cache)."""
        entry = page.locator(f"{field} input")
        entry.fill(value)
        entry.press("Enter")
        page.wait_for_timeout(300)
        run.click()
        page.wait_for_function("m => document.querySelector('.fedkit-status').innerText === m",
                               arg=f"not run: {message}")
        assert error.inner_text().strip() == message and "Traceback" not in page.content()
        assert status.evaluate("e => e.scrollWidth <= e.clientWidth"), "the status shows its whole line"
        assert not plot.is_visible() and page.evaluate(BROKEN_IMAGES) == []
        assert page.locator(".fedkit-table").inner_text().strip() == ""
        assert "from the cache" not in page.locator("body").inner_text()
        assert page.locator(".fedkit-progress .progress-bar").evaluate("e => e.style.width") in ("0%", "")
        entry.fill(good)
        entry.press("Enter")
        page.wait_for_timeout(300)
        run.click()
        page.wait_for_function("document.querySelector('.fedkit-status').innerText.includes('from the cache')")
        assert plot.is_visible() and error.inner_text().strip() == ""

    bad_value(".fedkit-rounds", "0", "rounds must be an integer ≥ 1, got 0", "3")
    bad_value(".fedkit-partition-param", "-1", "partition 'dirichlet': phi must lie in (0, inf), got -1.0", "0.5")
    bad_value(".fedkit-lr", "-1", "lr must be a finite number > 0, got -1.0", "0.1")
    # Stop: a long run ends after the round under way, and says so
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
    """The book, built from this checkout (Binder links to fedkit.book's default repository) and served over HTTP;
    yields (url, Book, each notebook's bytes as the build read them: others may edit them while the tests run)."""
    pytest.importorskip("mkdocs_jupyter", reason="mkdocs-jupyter is not installed (pip install -e '.[book]')")
    from fedkit.book import BRANCH, REPO, build

    site = tmp_path_factory.mktemp("book") / "site"
    notebooks = {p: p.read_bytes() for p in NOTEBOOKS}
    built = build(site, root=ROOT, repo=REPO, branch=BRANCH)
    port = free_port()
    server = ThreadingHTTPServer(("127.0.0.1", port), partial(QuietHandler, directory=str(site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{port}/", built, notebooks
    server.shutdown()


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


NOTEBOOKS = sorted(p for p in (ROOT / "notebooks").glob("*/*.ipynb") if not p.parent.name.startswith("."))
LESSONS = sorted((ROOT / "notebooks" / "teaching").glob("*.ipynb"))


def page_of(notebook: Path) -> str:
    return f"{notebook.parent.name}/{notebook.stem}.html"


def offline(page, url: str) -> list[str]:
    """Refuse, and list, every request of ``page`` that leaves ``url``'s server: the book must work offline."""
    outside = []

    def route(r):
        if r.request.url.startswith(url):
            r.continue_()
        else:
            outside.append(r.request.url)
            r.abort()
    page.route("**/*", route)
    return outside


def test_book_pages_load_with_their_images_and_links(browser, book, tmp_path):
    url, built, _ = book
    assert {page_of(p) for p in NOTEBOOKS} <= set(built.pages), "every notebook under notebooks/<folder>/ has a page"
    assert {"index.html", "concepts.html", "reproduction.html"} <= set(built.pages)
    page = browser.new_page(viewport={"width": 1200, "height": 900})
    page.set_default_timeout(120_000)
    outside, failed = offline(page, url), []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    checked, dead, broken, unlinked, images = set(), [], [], [], 0
    for path in built.pages:
        if path in ("404.html",) or path.startswith("search"):
            continue
        response = page.goto(url + path, wait_until="load")
        assert response is not None and response.ok, f"{path}: HTTP {response and response.status}"
        found = page.evaluate("""() => [...document.images].map(i => [i.currentSrc || i.src,
                                                                        i.complete && i.naturalWidth > 0])""")
        images += len(found)
        broken += [f"{path}: {src}" for src, ok in found if not ok]
        # a figure opens full size: its <img> sits in a link to the same file
        unlinked += page.evaluate("""() => [...document.images].filter(i => i.src.includes('/figures/'))
                                      .filter(i => i.closest('a')?.href !== i.src).map(i => i.src)""")
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
    assert not unlinked, f"figures without a link to their full size: {unlinked[:5]}"
    assert not failed, f"resources the pages asked for and did not get: {failed[:5]}"
    assert not outside, f"requests that leave the site (it must work offline): {outside[:5]}"
    assert images >= len(list((ROOT / "figures").glob("*/*.png"))), "the committed figures appear in the book"
    page.goto(url + "taco/fig7_gamma_sensitivity.html")
    page.locator("img[src*='fig7_gamma_sensitivity.png']").first.scroll_into_view_if_needed()
    page.mouse.wheel(0, -120)  # the caption and the cell above in view; the header settles
    page.wait_for_timeout(800)
    save_screenshot(page, tmp_path, "book.png")
    page.close()


def test_book_pages_follow_each_other_in_the_navigations_order(browser, book):
    url, built, _ = book
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url + "index.html")
    order = page.evaluate("""() => [...new Set([...document.querySelectorAll('.md-nav--primary a.md-nav__link[href]')]
                                                 .map(a => a.href.split('#')[0]))]""")
    assert len(order) >= len(NOTEBOOKS) + 3, order
    walked, previous, following = [], None, url + "index.html"
    while following and len(walked) <= len(order):
        page.goto(following, wait_until="domcontentloaded")
        walked.append(page.url)
        assert page.evaluate("() => document.querySelector('a.md-footer__link--prev')?.href ?? null") == previous
        previous = page.url
        following = page.evaluate("() => document.querySelector('a.md-footer__link--next')?.href ?? null")
    assert walked == order, "the next links lead through every page of the navigation, in its order"
    page.close()


def markdown_cells(notebook: bytes) -> list[str]:
    return [c.source for c in nbformat.reads(notebook.decode(), as_version=4).cells if c.cell_type == "markdown"]


def math_in(notebook: bytes) -> tuple[int, int]:
    """(display, all) formulas of a notebook's Markdown cells: $$...$$ and $...$ outside code."""
    text = "\n".join(markdown_cells(notebook))
    text = re.sub(r"```.*?```|`[^`\n]*`", "", text, flags=re.S)
    display = len(re.findall(r"\$\$.+?\$\$", text, flags=re.S))
    return display, display + len(re.findall(r"\$[^$]+\$", re.sub(r"\$\$.+?\$\$", "", text, flags=re.S)))


def test_every_lesson_renders_its_math(browser, book, tmp_path):
    url, _, committed = book
    assert LESSONS
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.set_default_timeout(60_000)
    outside = offline(page, url)
    for lesson in LESSONS:
        page.goto(url + page_of(lesson))
        page.wait_for_function("() => window.MathJax?.startup?.promise")
        page.evaluate("() => MathJax.startup.promise")
        shown = page.evaluate(r"""() => ({
            display: document.querySelectorAll('mjx-container[display="true"]').length,
            all: document.querySelectorAll('mjx-container').length,
            errors: [...document.querySelectorAll('mjx-merror, mjx-assistive-mml')].map(e => e.textContent)
                      .filter(t => /\\[A-Za-z]/.test(t) || t.includes('Undefined')),
            raw: [...document.querySelectorAll('.jp-MarkdownOutput')].map(e => {
                     const text = e.cloneNode(true);
                     text.querySelectorAll('mjx-container, code, pre').forEach(x => x.remove());
                     return text.textContent; }).filter(t => /\$|\\[A-Za-z]/.test(t))})""")
        assert not shown["raw"], f"{lesson.name} shows raw TeX: {shown['raw'][0][:300]}"
        assert not shown["errors"], f"{lesson.name}: TeX MathJax could not typeset: {shown['errors'][:3]}"
        display, formulas = math_in(committed[lesson])
        assert formulas, f"{lesson.name} has no math to check"
        assert (shown["display"], shown["all"]) == (display, formulas), \
            f"{lesson.name}: (display, all) formulas typeset {shown['display'], shown['all']}, in its source " \
            f"{display, formulas}"
    assert not outside, f"requests that leave the site (it must work offline): {outside[:5]}"
    page.goto(url + "teaching/02_client_drift.html")
    page.evaluate("() => MathJax.startup.promise")
    save_screenshot(page, tmp_path, "book_math.png")
    page.close()


def test_home_page_holds_the_syllabus_and_links_every_notebook(browser, book):
    from fedkit.book import lesson_times

    url, _, committed = book
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url + "index.html")
    links = page.evaluate("() => [...document.querySelectorAll('article a[href]')].map(a => a.href.split('#')[0])")
    assert [p.name for p in NOTEBOOKS if url + page_of(p) not in links] == [], "the home page links every notebook"
    rows = page.evaluate("""() => [...document.querySelectorAll('article table tr')].slice(1).map(tr =>
                               [...tr.cells].map(td => [td.innerText.trim(),
                                                        [...td.querySelectorAll('a')].map(a => a.href)]))""")
    lessons = [url + page_of(p) for p in LESSONS]
    assert [row[0][1] for row in rows] == [[lesson] for lesson in lessons], "one syllabus row per lesson, in order"
    times, _ = lesson_times(ROOT)
    for lesson, (_, (goal, _), (hours, _), (_, builds_on)) in zip(LESSONS, rows):
        first = markdown_cells(committed[lesson])[0]
        words = re.sub(r"\*\*Learning goal\.\*\*|[*_]", "", re.split(r"\n\s*\n", first)[1]).split()
        assert goal.split()[:3] == words[:3], f"{lesson.name}: its goal, from its first Markdown cell"
        assert hours == times.get(lesson.stem, "not measured")
        assert set(builds_on) <= set(lessons[:lessons.index(url + page_of(lesson))]), "it builds on earlier lessons"
    assert any(row[3][1] for row in rows), "some lesson builds on another"
    page.close()


def test_notebook_pages_link_the_notebook_and_binder(browser, book):
    from fedkit.book import BRANCH, REPO, binder_url

    url, _, committed = book
    page = browser.new_page()
    for notebook in NOTEBOOKS:
        page.goto(url + page_of(notebook), wait_until="domcontentloaded")
        download = page.locator("a.fedkit-download").evaluate("a => a.href")
        assert page.request.get(download).body() == committed[notebook], f"{notebook.name}: the committed file"
        launch = page.locator("a.fedkit-launch").get_attribute("href")
        assert launch == binder_url(REPO, BRANCH, f"notebooks/{notebook.parent.name}/{notebook.name}")
    page.close()


def test_notebook_pages_share_one_stylesheet(browser, book):
    url, _, _ = book
    page = browser.new_page()
    inline = {}
    for notebook in NOTEBOOKS:
        html = page.request.get(url + page_of(notebook)).text()
        inline[notebook.name] = sum(len(css) for css in re.findall(r"<style[^>]*>(.*?)</style>", html, flags=re.S))
    assert max(inline.values()) < 2_000, f"CSS inlined per page (characters): {inline}"
    page.goto(url + "teaching/02_client_drift.html")
    assert page.evaluate("""() => [...document.styleSheets].filter(s => s.href?.endsWith('/assets/fedkit/notebook.css'))
                                  .map(s => s.cssRules.length)""")[0] > 1_000
    assert page.evaluate("""() => getComputedStyle(document.querySelector('.jupyter-wrapper'))
                                  .getPropertyValue('--jp-cell-editor-background')""").strip()  # and applies
    page.close()


def test_reproduction_summary_comes_first_and_no_table_column_is_cut_off(browser, book, tmp_path):
    url, _, _ = book
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    page.goto(url + "reproduction.html")
    section = page.evaluate("""() => {
        const li = [...document.querySelectorAll('.md-nav--primary .md-nav__item--nested')]
                     .find(li => li.querySelector(':scope > label')?.innerText.trim() === 'Reproduction');
        return [...new Set([...li.querySelectorAll('a.md-nav__link[href]')].map(a => a.href.split('#')[0]))]; }""")
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert section[0] == url + "reproduction.html" and len(section) == 1 + len(re.findall(r"^## ", text, flags=re.M))
    summary = re.search(r"<!-- ledger:summary.*?\n\| (.*?) \|\n", text)[1].split(" | ")
    first = page.evaluate("""() => {
        const t = document.querySelector('article table'), h2 = document.querySelector('article h2');
        return [[...t.querySelectorAll('th')].map(th => th.innerText.trim()), t.getBoundingClientRect().top,
                !h2 || !!(t.compareDocumentPosition(h2) & Node.DOCUMENT_POSITION_FOLLOWING)]; }""")
    assert first == [summary, first[1], True] and first[1] < 800, "the summary table opens the first page, in view"
    for target in section:
        page.goto(target)
        tables = page.locator("article table")
        for i in range(tables.count()):
            fit = tables.nth(i).evaluate("""t => {
                const right = document.querySelector('article').getBoundingClientRect().right;
                const ths = [...t.querySelectorAll('th')].map(th => th.getBoundingClientRect().right);
                let box = t;  // or it scrolls sideways within a box
                while (box && !(['auto', 'scroll'].includes(getComputedStyle(box).overflowX)
                                && box.scrollWidth > box.clientWidth)) box = box.parentElement;
                return (Math.max(...ths) <= Math.min(right, innerWidth) + 1) || !!box; }""")
            assert fit, f"{target}: table {i} has a column cut off at 1280 px"
        tallest = max(range(tables.count()), key=lambda i: tables.nth(i).bounding_box()["height"])
        table = tables.nth(tallest)
        if table.bounding_box()["height"] > 800:  # its header row stays in view while it scrolls by
            table.evaluate("t => window.scrollTo(0, t.getBoundingClientRect().top + scrollY + t.offsetHeight / 2)")
            head = table.locator("th").first.bounding_box()
            assert 0 <= head["y"] < 120, f"{target}: the header row left the screen ({head})"
    page.goto(url + "reproduction/taco.html")
    page.locator("article table").first.evaluate("t => scrollTo(0, t.getBoundingClientRect().top + scrollY - 200)")
    page.wait_for_timeout(800)  # the header's title settles
    save_screenshot(page, tmp_path, "book_reproduction.png")
    page.close()
