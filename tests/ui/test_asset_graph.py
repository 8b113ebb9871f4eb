"""The asset graph as a person sees it: real headless Chromium against the webserver.

Debian's `chromium` renders the UI's pages (the React app fetching from the webserver's
GraphQL API); `--dump-dom` gives the rendered DOM and `--screenshot` a PNG. The expected
assets and groups come from the code location itself (`pipelines.definitions.defs`).

Chromium missing fails these tests with how to install it, unless JSL_SKIP_BROWSER_TESTS=1.
"""

import struct
import subprocess
from collections import defaultdict
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import quote

from dagster import AssetKey

from tests.ui import REPOSITORY, Webserver

BROWSER_TIMEOUT = 180.0  # seconds for one Chromium process
VIRTUAL_TIME_BUDGET_MS = 20_000  # page time to settle: virtual, spent only while idle
WINDOW = (1600, 1000)
BRONZE_KEY = AssetKey(["bronze", "file_events"])  # its group's page is the screenshot
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# A blank 1600x1000 page compresses to a few KB; a drawn graph with navigation is far larger.
MIN_SCREENSHOT_BYTES = 20_000

# As root Chromium needs --no-sandbox; the network flags keep it off the (closed) internet.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-proxy-server",
    "--hide-scrollbars",
)


class _VisibleText(HTMLParser):
    """Collects the text a reader would see (no script or style contents)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self._hidden = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in ("script", "style"):
            self._hidden += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden and data.strip():
            self.parts.append(data.strip())


def visible_text(html: str) -> list[str]:
    """The rendered page's text nodes, in document order."""
    parser = _VisibleText()
    parser.feed(html)
    return parser.parts


def run_chromium(chromium: Path, profile: Path, url: str, *args: str) -> str:
    """Runs headless Chromium on `url` with `args`; returns its stdout.

    Args:
        chromium: the browser binary.
        profile: a fresh user-data directory.
        url: the page to load.
        *args: the action, e.g. `--dump-dom` or `--screenshot=PATH`.
    """
    result = subprocess.run(
        [
            str(chromium),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            f"--virtual-time-budget={VIRTUAL_TIME_BUDGET_MS}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            *args,
            url,
        ],
        capture_output=True,
        text=True,
        timeout=BROWSER_TIMEOUT,
    )
    assert result.returncode == 0, (
        f"chromium exited with {result.returncode} on {url}:\n{result.stderr[-3000:]}"
    )
    return result.stdout


def group_page_url(server: Webserver, group: str) -> str:
    """The lineage page of one asset group of the served code location."""
    repo_path = quote(f"{REPOSITORY}@{server.location_name}", safe="@")
    return f"{server.base_url}/locations/{repo_path}/asset-groups/{quote(group)}"


def assets_by_group() -> dict[str, set[str]]:
    """Each asset group of the code location and the names its graph nodes show."""
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    groups: dict[str, set[str]] = defaultdict(set)
    for key in graph.get_all_asset_keys():
        groups[graph.get(key).group_name].add(key.path[-1])
    return dict(groups)


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height from a PNG's IHDR chunk."""
    assert data[:8] == PNG_SIGNATURE, f"not a PNG (starts with {data[:8]!r})"
    assert data[12:16] == b"IHDR", "PNG without an IHDR chunk first"
    return struct.unpack(">II", data[16:24])


def test_global_lineage_page_shows_every_asset_group(chromium, webserver, tmp_path):
    html = run_chromium(
        chromium, tmp_path / "profile", f"{webserver.base_url}/asset-groups", "--dump-dom"
    )

    text = visible_text(html)
    assert "Global asset lineage" in text, text[:80]
    missing = set(assets_by_group()) - set(text)
    assert not missing, f"asset groups not on the global lineage page: {sorted(missing)}"


def test_each_asset_group_page_draws_a_node_for_every_asset_of_the_group(
    chromium, webserver, tmp_path
):
    for group, names in sorted(assets_by_group().items()):
        html = run_chromium(
            chromium, tmp_path / f"profile-{group}", group_page_url(webserver, group), "--dump-dom"
        )
        text = visible_text(html)
        missing = names - set(text)
        assert not missing, (
            f"group {group!r}: assets {sorted(missing)} not drawn on "
            f"{group_page_url(webserver, group)}; the page shows: {text[:60]}"
        )


def test_asset_graph_screenshot_is_a_full_size_picture(
    chromium, webserver, artifacts_dir, tmp_path
):
    from pipelines.definitions import defs

    group = defs.resolve_asset_graph().get(BRONZE_KEY).group_name
    screenshot = artifacts_dir / f"asset-graph-{group}.png"
    screenshot.unlink(missing_ok=True)

    run_chromium(
        chromium,
        tmp_path / "profile",
        group_page_url(webserver, group),
        f"--screenshot={screenshot}",
    )

    print(f"asset graph screenshot: {screenshot}")
    data = screenshot.read_bytes()
    assert png_size(data) == WINDOW
    assert len(data) > MIN_SCREENSHOT_BYTES, f"{screenshot} looks blank ({len(data)} bytes)"
