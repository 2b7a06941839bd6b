"""The Diagnose page in a real headless browser against a live server (as tests/test_web.py
does for the other pages): paste or load files, get the ranked answer, the deciding lines
highlighted among their neighbours. A screenshot goes to test-artifacts/."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import Server, start_server
from test_web import ARTIFACTS, browser, open_page, page  # noqa: F401  (fixtures)

DATA = Path(__file__).parent / "data" / "diagnose"


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start_server(f"duckdb:///{tmp_path_factory.mktemp('web-diagnose') / 'web.duckdb'}")
    yield server
    server.stop()


def diagnose(page) -> None:  # noqa: F811
    page.click("#run")
    page.wait_for_selector("body[data-done=true]", timeout=30_000)


def test_pasted_lines_get_a_ranked_answer_with_the_deciding_lines_highlighted(live, page):  # noqa: F811
    log = (DATA / "parallelcluster-1150-nfs-hung-task.log").read_text()
    open_page(page, f"{live.url}/ui/diagnose.html")
    assert page.locator("nav a.active").inner_text() == "Diagnose"
    page.fill("#paste", log)
    diagnose(page)
    first = page.locator("article.diagnosis").first
    assert first.locator(".place").inner_text() == "ip-172-31-27-211"
    assert "software" in first.locator("h2").inner_text() and "dependency" in first.locator("h2").inner_text()
    marked = first.locator("mark.cited")
    assert marked.count() == 9
    assert marked.nth(0).inner_text().strip().endswith("INFO: task strat1_sim:78808 blocked for more than 120 seconds.")
    assert "check `dmesg" in first.locator("ul.missing").inner_text()
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "diagnose.png"), full_page=True)


def test_files_load_into_the_paste_and_a_host_places_the_answer(live, page):  # noqa: F811
    open_page(page, f"{live.url}/ui/diagnose.html")
    page.set_input_files("#files", str(DATA / "jade-194-ecc-dgk713.log"))
    page.wait_for_function("document.getElementById('paste').value.includes('uncorrectable ECC')")
    page.fill("#host", "dgk713")
    diagnose(page)
    first = page.locator("article.diagnosis").first
    assert first.locator(".place").inner_text() == "dgk713" and "gpu" in first.locator("h2").inner_text()
    assert first.locator("mark.cited").inner_text().strip().endswith("RuntimeError: CUDA error: uncorrectable ECC error encountered")
    assert first.locator(".action").inner_text().startswith("evict dgk713")


def test_a_paste_that_names_no_host_says_so(live, page):  # noqa: F811
    open_page(page, f"{live.url}/ui/diagnose.html")
    page.fill("#paste", (DATA / "deepspeed-5482-cuda-unknown-error.log").read_text())
    diagnose(page)
    first = page.locator("article.diagnosis").first
    assert first.locator(".place.unnamed").inner_text() == "an unnamed host"
    assert "null" not in first.inner_text()


def test_lines_that_say_nothing_get_a_plain_no(live, page):  # noqa: F811
    open_page(page, f"{live.url}/ui/diagnose.html")
    page.fill("#paste", "epoch 3 step 1200 loss 2.31\n")
    diagnose(page)
    assert "No diagnosis" in page.locator("#answer").inner_text()
