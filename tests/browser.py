"""A headless Chromium (Debian's `chromium` and `chromium-driver`) driven by Selenium, and the annotation page
served from a thread: what the browser test and `bench/annotate_latency.py` share."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from xling.annotation.options import AnnotateOptions
from xling.annotation.server import create_app
from xling.annotation.session import Session


def chromium_paths() -> tuple[str, str] | None:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    return (browser, driver) if browser and driver else None


# the one mark of every test that drives the browser
needs_chromium = pytest.mark.skipif(
    chromium_paths() is None,
    reason="chromium and chromium-driver are not installed (apt install chromium chromium-driver)",
)


@contextmanager
def served(session: Session, options: AnnotateOptions, port: int = 0) -> Iterator[str]:
    """The page on a local port (a free one unless given), for the duration of the block; yields its address."""
    from werkzeug.serving import make_server

    server = make_server("127.0.0.1", port, create_app(session, options), threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.port}/"
    finally:
        server.shutdown()
        server.server_close()


@contextmanager
def chromium(*arguments: str) -> Iterator:
    """A headless Chromium; `arguments` are more command-line switches (e.g. host resolver rules)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    browser, driver = chromium_paths()
    options = webdriver.ChromeOptions()
    options.binary_location = browser
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1200,800", *arguments):
        options.add_argument(argument)
    session = webdriver.Chrome(service=Service(driver), options=options)
    try:
        yield session
    finally:
        session.quit()


def press(driver, *keys) -> None:
    """Keys sent to the page as a person types them."""
    from selenium.webdriver.common.action_chains import ActionChains

    for key in keys:
        ActionChains(driver).send_keys(key).perform()


def shift_right(driver) -> None:
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    ActionChains(driver).key_down(Keys.SHIFT).send_keys(Keys.ARROW_RIGHT).key_up(Keys.SHIFT).perform()


def shown_text(driver) -> str:
    """The sentence as the page shows it, without the suggestions' type badges."""
    script = "const c = document.getElementById('sentence').cloneNode(true);"
    script += "c.querySelectorAll('.badge').forEach((b) => b.remove()); return c.textContent"
    return driver.execute_script(script)


def wait_for(driver, script: str, timeout: float = 10):
    """The value of a JavaScript expression once it is truthy."""
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: d.execute_script(f"return {script}"))
