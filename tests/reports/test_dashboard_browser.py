"""The dashboard in headless Chromium: headline, a heatmap and the worst-cases table render
without console errors, the worst-cases table fits a 1400-px page with its repro commands
shown whole; the screenshot stays as an artifact under the run directory.

Debian's `chromium` is driven through Playwright's CDP client (no browser download).
scripts/test.sh installs chromium when missing; under CI a missing browser fails.
"""

import os
import shutil
from pathlib import Path

import pytest
from injected_dataset import Injected, build_injected

from fia_fuzz.reports import render
from fia_fuzz.reports.browser import CHROMIUM_FLAGS, find_chromium, screenshot

pytestmark = pytest.mark.browser
#: Where the screenshot artifact's run directory lives (kept after the test session).
ARTIFACTS = Path(os.environ.get("FIA_ARTIFACTS", Path(__file__).parents[2] / "runs"))


def _chromium() -> str:
    exe = find_chromium()
    if exe is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing in CI (scripts/test.sh installs it)")
        pytest.skip("no chromium here (apt-get install chromium)")
    return exe


def test_dashboard_renders_in_headless_chromium() -> None:
    exe = _chromium()
    sync_api = pytest.importorskip("playwright.sync_api")
    run_dir = ARTIFACTS / "ci-dashboard"
    shutil.rmtree(run_dir, ignore_errors=True)
    run_dir.mkdir(parents=True)
    injected = build_injected(run_dir)
    # repro commands as a nightly's are: a long results path and a plug-in runner spec
    df = injected.df.assign(repro=injected.df["repro"] + " --results "
                            "/shared/fia/nightly/20261122-atlas-a2-8x910b/shard-3-of-4 "
                            "--runner vendor_kernels.fia_build_2026_11_20:make_runner")
    render(df, run_dir / "dashboard.html", title="fia-fuzz CI dashboard")
    problems: list[str] = []
    with sync_api.sync_playwright() as pw:
        # Playwright adds --headless and a fresh temporary --user-data-dir itself
        flags = [f for f in CHROMIUM_FLAGS if f != "--headless"]
        browser = pw.chromium.launch(executable_path=exe, headless=True, args=flags)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}")
                    if m.type in ("error", "warning") else None)
            page.on("pageerror", lambda e: problems.append(f"page error: {e}"))
            page.on("request", lambda r: problems.append(f"network: {r.url}")
                    if not r.url.startswith(("file:", "data:", "blob:")) else None)
            page.goto((run_dir / "dashboard.html").as_uri(), wait_until="load")
            assert "results from 2 run(s)" in page.inner_text("#headline")
            shown = "[data-policy='flash-attention']"
            page.wait_for_selector(f".tab.active .heatmaps .layer{shown} rect", state="visible",
                                   timeout=20000)
            assert page.locator(".tab.active .cards .card").count() == 5
            heatmaps = page.locator(".tab.active .heatmaps .chart.heatmap")
            assert heatmaps.count() >= 3
            first = heatmaps.nth(0)
            assert first.locator(f".layer{shown}").is_visible()
            first.locator("select.policy").select_option("ascend-thousandth")
            assert first.locator(".layer[data-policy='ascend-thousandth']").is_visible()
            assert not first.locator(f".layer{shown}").is_visible()
            assert page.locator(".tab.active .chart.dist svg path").count() >= 2
            assert page.locator(".tab.active .chart.trend svg polyline").count() == 5
            rows = page.locator("#worst tr")
            assert rows.count() > 1 and rows.nth(1).is_visible()
            assert injected.worst_case in rows.nth(1).inner_text()
            # the worst cases fit the 1400-px page: long cells and repro commands wrap
            width, right, view = page.evaluate(
                "() => { const t = document.querySelector('#worst');"
                " return [t.scrollWidth, t.getBoundingClientRect().right,"
                " window.innerWidth]; }")
            assert width <= 1400 and right <= view, (width, right, view)
            repro = rows.nth(1).locator(".cmd code")
            assert repro.is_visible() and repro.inner_text().startswith(
                f"fia-fuzz repro {injected.worst_case}")
            assert rows.nth(1).locator("button.copy").is_visible()
            page.locator(".tabs button").nth(2).click()
            assert page.locator(".tab.active").get_attribute("data-runner") == (
                "perturbing-golden-double")
            page.locator(".tabs button").nth(0).click()
            page.screenshot(path=str(run_dir / "dashboard.png"), full_page=True)
        finally:
            browser.close()
    assert problems == []
    assert (run_dir / "dashboard.png").stat().st_size > 10_000


def test_cli_screenshot_helper(injected: Injected, tmp_path: Path) -> None:
    _chromium()
    page = render(injected.df, tmp_path / "d.html")
    png = screenshot(page, tmp_path / "shot.png", width=800, height=600)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
