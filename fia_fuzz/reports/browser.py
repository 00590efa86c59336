"""Headless Chromium for dashboard screenshots (Debian's `chromium`, never a downloaded build).

The flags keep a headless run self-contained: no sandbox (root in CI), no
GPU, no background network or component updates, a fresh profile per run.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--hide-scrollbars")


def find_chromium() -> str | None:
    """$FIA_CHROMIUM, else /usr/bin/chromium, else a `chromium` on PATH; None if absent."""
    for candidate in (os.environ.get("FIA_CHROMIUM"), "/usr/bin/chromium",
                      shutil.which("chromium"), shutil.which("chromium-browser")):
        if candidate and Path(candidate).is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def screenshot(html: str | Path, png: str | Path, width: int = 1400, height: int = 2400,
               timeout_s: float = 120.0) -> Path:
    """Render `html` in headless Chromium and save a `width` x `height` PNG at `png`."""
    exe = find_chromium()
    if exe is None:
        raise FileNotFoundError("no chromium found (apt-get install chromium, or set "
                                "FIA_CHROMIUM)")
    png = Path(png).resolve()
    png.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="fia-chromium-") as profile:
        cmd = [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}",
               f"--window-size={width},{height}", "--virtual-time-budget=10000",
               f"--screenshot={png}", Path(html).resolve().as_uri()]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s,
                              check=False)
    if proc.returncode != 0 or not png.is_file():
        raise RuntimeError(f"chromium screenshot failed ({proc.returncode}): "
                           f"{proc.stderr.strip()[-2000:]}")
    return png
