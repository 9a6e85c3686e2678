"""The Vars menu at 1440 px when its button sits at the right end of the toolbar (as on a run whose
toolbar has no metadata filter): it opened from the button's left end and ran 23 px past the page's right
edge, so the whole page scrolled sideways. It now opens leftward from the button's right end, and where
there is room it still opens under the button's left end."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from tests.viewer.layout import DESKTOP, page_width, ready, sized_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page


def _open(page: Page, html: Path, *, at_the_right_end: bool) -> dict[str, Any]:
    page.goto(html.as_uri())
    ready(page)
    if at_the_right_end:  # where the toolbar puts it when its other controls fill the line
        page.evaluate("document.querySelector('#var-menu').style.marginLeft = 'auto'")
    page.locator("#var-menu summary").click()
    page.wait_for_selector("#var-menu[open] .var-menu-list")
    boxes: dict[str, Any] = page.evaluate(
        """() => {
          const box = (el) => {
            const r = el.getBoundingClientRect();
            return {left: r.left, right: r.right};
          };
          return {list: box(document.querySelector("#var-menu .var-menu-list")),
                  summary: box(document.querySelector("#var-menu summary"))};
        }"""
    )
    return boxes


def test_the_vars_menu_at_the_right_edge_opens_inside_the_page(
    browser: Browser, runs: tuple[Path, Path]
) -> None:
    html = runs[1].with_suffix(".html")
    with sized_page(browser, DESKTOP) as page:
        boxes = _open(page, html, at_the_right_end=True)
        assert boxes["list"]["right"] <= DESKTOP["width"], boxes
        assert abs(boxes["list"]["right"] - boxes["summary"]["right"]) <= 1, boxes  # under its button
        assert page_width(page) == {"scroll": DESKTOP["width"], "viewport": DESKTOP["width"]}
    with sized_page(browser, DESKTOP) as page:  # with room, as before: from the button's left end
        boxes = _open(page, html, at_the_right_end=False)
        assert abs(boxes["list"]["left"] - boxes["summary"]["left"]) <= 1, boxes
