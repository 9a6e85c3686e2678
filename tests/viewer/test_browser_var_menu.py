"""The run page's Vars menu in real headless Chromium: on a phone (390 px) it opens inside the screen and
scrolls in its own box, however far right its button sits and however long a var's name; at 1440 px it
keeps its look, a box opening under its button."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
import yaml

from tests.viewer.layout import DESKTOP, PHONE, outside_viewport, page_width, ready, sized_page

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# Many vars (more than the menu's height shows), one with a name longer than a phone is wide.
_NAMES = [f"var_{n:02d}" for n in range(30)] + ["a_var_whose_name_is_far_longer_than_a_phone_screen_is_wide"]


@pytest.fixture(scope="module")
def many_vars_html(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("varmenu")
    config = {
        "prompts": ["Say {{ var_00 }}"],
        "providers": ["echo"],
        "tests": [
            {
                "vars": {name: f"value {n}" for name in _NAMES},
                "assert": [{"type": "contains", "value": "Say"}],
            }
            for n in range(3)
        ],
    }
    path = directory / "vars.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    html = directory / "vars.html"
    args = [sys.executable, "-m", "evalh", "run", str(path), "--no-cache", "--no-write", "-o", str(html)]
    ran = subprocess.run(args, capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr
    return html


def _open_menu(page: Page) -> dict[str, Any]:
    page.locator("#var-menu summary").click()
    page.wait_for_selector("#var-menu[open] .var-menu-list")
    boxes: dict[str, Any] = page.evaluate(
        """() => {
          const list = document.querySelector("#var-menu .var-menu-list");
          const box = (el) => {
            const r = el.getBoundingClientRect();
            return {left: r.left, right: r.right};
          };
          return {list: box(list), summary: box(document.querySelector("#var-menu summary")),
                  scrolls: list.scrollHeight > list.clientHeight, wide: list.scrollWidth > list.clientWidth,
                  overflow: getComputedStyle(list).overflowY};
        }"""
    )
    return boxes


def test_the_vars_menu_opens_inside_a_phone_screen_and_scrolls_in_its_own_box(
    browser: Browser, many_vars_html: Path
) -> None:
    with sized_page(browser, PHONE) as page:
        page.goto(many_vars_html.as_uri())
        ready(page)
        # its button as far right as the toolbar puts it: the menu must still open inside the screen
        page.evaluate("document.querySelector('#var-menu').style.marginLeft = 'auto'")
        boxes = _open_menu(page)
        assert boxes["list"]["left"] >= 0 and boxes["list"]["right"] <= PHONE["width"], boxes
        assert boxes["scrolls"] and boxes["overflow"] == "auto"  # 31 vars scroll inside the menu
        assert not boxes["wide"]  # the long name wraps inside the box
        assert page_width(page) == {"scroll": 390, "viewport": 390}
        assert outside_viewport(page, "body") == []
        page.locator(f"#var-menu input[data-var={_NAMES[-1]}]").uncheck()
        assert page.locator("#var-menu summary").inner_text() == "Vars (1 hidden)"


def test_the_vars_menu_keeps_its_desktop_look(browser: Browser, many_vars_html: Path) -> None:
    with sized_page(browser, DESKTOP) as page:
        page.goto(many_vars_html.as_uri())
        ready(page)
        boxes = _open_menu(page)
        # a box of its own width, under its button: here too wide (a long name) to start where the button
        # starts without running off the page, so it ends where the button ends (test_browser_var_menu_edge)
        assert abs(boxes["list"]["right"] - boxes["summary"]["right"]) <= 1, boxes
        assert page_width(page) == {"scroll": DESKTOP["width"], "viewport": DESKTOP["width"]}
        assert boxes["list"]["right"] - boxes["list"]["left"] < 900, boxes
        assert boxes["scrolls"]
        assert (
            page.locator("#var-menu .var-menu-list label").first.evaluate(
                "l => getComputedStyle(l).whiteSpace"
            )
            == "nowrap"
        )
