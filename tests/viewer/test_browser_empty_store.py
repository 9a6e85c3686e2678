"""The viewer over an empty run store: the run list says how to make a run, and nothing the page leaves
out shows as the word "null" (Element.append writes a null child as that text)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalh.viewer.server import ViewerServer
from evalh.viewer.sources import StoredRuns

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_an_empty_store_says_how_to_start(page: Page) -> None:
    with ViewerServer(StoredRuns()) as server:
        page.goto(server.url)
        page.wait_for_selector("body[data-ready=true]")
        text = page.locator("body").inner_text()
    assert "No runs yet: run `evalh run` first." in text
    assert "null" not in text
