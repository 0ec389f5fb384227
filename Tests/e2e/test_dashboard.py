"""The live dashboard (Clients/dashboard) in a real browser: headless Chromium driven by Selenium.

reactord serves the page at `/` and its files at `/assets/`. Each test starts its own reactord,
opens the page, and checks what a person would see while events arrive from curl or from the page's
own form. The browser is Debian's `chromium` with its `chromium-driver` (/usr/bin/chromedriver), so
Selenium downloads nothing; scripts/setup.sh installs both. Without them these tests fail (they are
part of the suite, not optional).

A reactord that does not serve `/` yet (an older build) is still tested: the page is then served by
a small static server here and pointed at reactord with `?server=`, which reactord allows with
`--cors-origin '*'`; test_reactord_serves_the_dashboard fails in that case.

Every wait is bounded (WAIT seconds). The run leaves a screenshot in Tests/e2e/artifacts/
(dashboard.png, and <test>-failure.png for a failing test).
"""

from __future__ import annotations

import json
import os
import shutil
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import REPO, Reactord, curl, free_port, get_state, request
from subscriptions import apply_patch

try:
    from selenium import webdriver
    from selenium.common.exceptions import TimeoutException, WebDriverException
    from selenium.webdriver.chrome.service import Service
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait
except ImportError as error:  # reported by the `driver` fixture, as a failure
    SELENIUM_IMPORT_ERROR: ImportError | None = error
else:
    SELENIUM_IMPORT_ERROR = None

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
WAIT = 10  # seconds, the most any single wait may take
DASHBOARD = REPO / "Clients" / "dashboard"
CLIENT_JS = REPO / "Clients" / "js" / "reactor-client.js"
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
TOKEN = "d4shb0ard-s3cret"

# What reactord serves, and the file each path must be.
SERVED = {
    "/": (DASHBOARD / "index.html", "text/html"),
    "/assets/dashboard.css": (DASHBOARD / "dashboard.css", "text/css"),
    "/assets/dashboard.js": (DASHBOARD / "dashboard.js", "javascript"),
    "/assets/reactor-client.js": (CLIENT_JS, "javascript"),
}


# ---------------------------------------------------------------------------------------------
# The browser


@pytest.fixture(scope="module")
def driver():
    """One headless Chromium for the module (starting one takes a second or two)."""
    missing = [path for path in (CHROMIUM, CHROMEDRIVER) if not (os.access(path, os.X_OK) or shutil.which(Path(path).name))]
    if SELENIUM_IMPORT_ERROR is not None or missing:
        pytest.fail(
            "the dashboard tests need Chromium, its driver and Selenium: "
            + (f"missing {', '.join(missing)} (Debian packages chromium, chromium-driver); " if missing else "")
            + (f"cannot import selenium ({SELENIUM_IMPORT_ERROR}); " if SELENIUM_IMPORT_ERROR else "")
            + "run scripts/setup.sh, or `apt-get install chromium chromium-driver` and "
            "`pip install -r Tests/e2e/requirements.txt`",
            pytrace=False,
        )
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM if os.access(CHROMIUM, os.X_OK) else shutil.which("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--window-size=1440,960", "--lang=en-US"):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service(CHROMEDRIVER if os.access(CHROMEDRIVER, os.X_OK) else shutil.which("chromedriver"))
    try:
        browser = webdriver.Chrome(service=service, options=options)
    except WebDriverException as error:
        pytest.fail(f"could not start headless Chromium through {service.path}: {error.msg}", pytrace=False)
    browser.set_page_load_timeout(WAIT)
    browser.set_script_timeout(WAIT)
    yield browser
    browser.quit()


@pytest.fixture
def browser(driver, request):
    """The module's browser for one test: no JavaScript errors allowed; a screenshot on failure."""
    driver.get("about:blank")
    driver.get_log("browser")  # drop what earlier tests left
    failure_shot = ARTIFACTS / f"{request.node.name}-failure.png"
    failure_shot.unlink(missing_ok=True)
    failed_before = request.session.testsfailed
    yield driver
    if request.session.testsfailed > failed_before:
        ARTIFACTS.mkdir(exist_ok=True)
        driver.save_screenshot(str(failure_shot))
    errors = [entry for entry in driver.get_log("browser") if entry.get("source") == "javascript"]
    # Leave the page before the server stops, so that it does not keep reconnecting into the next test.
    if driver.current_url.startswith("http"):
        driver.execute_script("sessionStorage.clear(); localStorage.clear()")
    driver.get("about:blank")
    assert not errors, f"JavaScript errors on the page: {errors}"


def waiter(driver, timeout: float = WAIT) -> WebDriverWait:
    return WebDriverWait(driver, timeout, poll_frequency=0.05)


def wait_for(driver, condition, message: str, timeout: float = WAIT):
    """Waits for `condition(driver)` to be truthy and returns it; fails with `message` and what the page shows."""
    try:
        return waiter(driver, timeout).until(lambda d: condition(d))
    except TimeoutException:
        pytest.fail(f"{message} (after {timeout} s)\n{describe(driver)}", pytrace=False)


def describe(driver) -> str:
    """What the page shows, for failure messages."""
    try:
        return driver.execute_script("""
            const text = (id) => document.querySelector(`[data-testid="${id}"]`)?.innerText ?? '(none)';
            return `status: ${text('status')} | version: ${text('version')}\\n` +
                   `tree:\\n${text('tree').slice(0, 1500)}\\n` +
                   `past: ${document.querySelector('[data-testid=past-banner]')?.hidden ? '(hidden)' : text('past-banner')}\\n` +
                   `error: ${text('error')}\\nlog: ${text('event-log').slice(0, 500)}\\nnotes: ${text('history-note')} ${text('log-note')}`;
        """)
    except WebDriverException as error:
        return f"(could not read the page: {error.msg})"


def by_testid(driver, name: str):
    return driver.find_element(By.CSS_SELECTOR, f'[data-testid="{name}"]')


def text_of(driver, name: str) -> str:
    return driver.execute_script(f'return document.querySelector(\'[data-testid="{name}"]\')?.textContent ?? null;')


def tree_value(driver, pointer: str) -> str | None:
    """The leaf shown at `pointer` in the tree, as the page prints it (JSON), or None when absent."""
    return driver.execute_script(
        "const node = [...document.querySelectorAll('[data-testid=tree] .jnode')]"
        "  .find((n) => n.dataset.pointer === arguments[0]);"
        "return node ? (node.querySelector(':scope > .jrow > .jval')?.textContent ?? '(container)') : null;",
        pointer,
    )


def tree_pointers(driver) -> list[str]:
    return driver.execute_script("return [...document.querySelectorAll('[data-testid=tree] .jnode')].map((n) => n.dataset.pointer);")


def wait_for_value(driver, pointer: str, value) -> None:
    expected = json.dumps(value, ensure_ascii=False)
    wait_for(driver, lambda d: tree_value(d, pointer) == expected, f"the tree never showed {expected} at {pointer}")


def wait_connected(driver, version: int | None = None) -> None:
    wait_for(driver, lambda d: d.execute_script("return document.querySelector('[data-testid=status]').dataset.status") == "open",
             "the dashboard never connected")
    assert text_of(driver, "status").strip() == "connected"
    if version is not None:
        wait_for_version(driver, version)


def wait_for_version(driver, version: int) -> None:
    wait_for(driver, lambda d: text_of(d, "version") == str(version), f"the version never showed {version}")


def log_versions(driver) -> list[int]:
    return driver.execute_script(
        "return [...document.querySelectorAll('[data-testid=event-log] [data-testid=log-entry]')].map((li) => Number(li.dataset.version));")


def type_into(element, text: str) -> None:
    """Replaces a field's text as a person would: select all, then type."""
    element.click()
    element.send_keys(Keys.CONTROL, "a")
    element.send_keys(Keys.DELETE)
    element.send_keys(text)


# ---------------------------------------------------------------------------------------------
# The server and the page's address


def serves_dashboard(server: Reactord) -> bool:
    answer = request(server, "GET", "/")
    return answer.status == 200 and (answer.header("Content-Type") or "").startswith("text/html")


@pytest.fixture
def dashboard(reactord, tmp_path):
    """Starts a reactord (flags as given) with a data directory, and returns (server, page URL)."""
    count = iter(range(100))

    def start(*flags: str) -> tuple[Reactord, str]:
        server = reactord("--cors-origin", "*", "--data-dir", str(tmp_path / f"data-{next(count)}"), *flags)
        assert serves_dashboard(server), f"reactord does not serve the dashboard at /:\n{server.log()}"
        return server, f"{server.base_url}/"

    return start


def with_query(url: str, name: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{name}={urllib.parse.quote(value, safe='/')}"


def fire(server: Reactord, event, *args: str) -> dict:
    """POST /events with curl, as a person in a terminal would; returns the JSON answer."""
    done = curl("-X", "POST", f"{server.base_url}/events", "-H", "Content-Type: application/json",
                "--data-binary", json.dumps(event), *args)
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    return json.loads(done.stdout)


# ---------------------------------------------------------------------------------------------
# reactord serves the page


@pytest.mark.parametrize("flags", [(), ("--token", f"dash:{TOKEN}:read+fire")], ids=["open", "with-tokens"])
def test_reactord_serves_the_dashboard(reactord, flags):
    """The page and its files, byte for byte, with types a browser accepts (a module script must be
    JavaScript); with tokens configured too, and without one, since the page asks for the token."""
    server = reactord(*flags)
    for path, (source, kind) in SERVED.items():
        answer = request(server, "GET", path)
        assert answer.status == 200, f"GET {path}: {answer}"
        assert kind in (answer.header("Content-Type") or ""), f"GET {path}: Content-Type {answer.header('Content-Type')}"
        assert answer.body == source.read_bytes(), f"GET {path} is not {source.relative_to(REPO)}"


# ---------------------------------------------------------------------------------------------
# Live state


def test_shows_connection_version_and_state(browser, dashboard):
    server, url = dashboard()
    for _ in range(3):
        fire(server, {"type": "increment", "path": "/counter"})
    browser.get(url)
    wait_connected(browser, version=3)
    wait_for_value(browser, "/counter", 3)
    assert by_testid(browser, "rate").text.strip() != ""
    assert by_testid(browser, "server").text.strip() != ""


def test_event_from_curl_updates_the_tree(browser, dashboard):
    server, url = dashboard()
    browser.get(url)
    wait_connected(browser, version=0)

    assert fire(server, {"type": "set", "path": "/players/0", "value": {"name": "Ayla", "level": 3}}) == {"version": 1}
    wait_for_value(browser, "/players/0/name", "Ayla")
    wait_for_value(browser, "/players/0/level", 3)
    wait_for_version(browser, 1)

    assert fire(server, {"type": "increment", "path": "/players/0/level"}) == {"version": 2}
    wait_for_value(browser, "/players/0/level", 4)
    wait_for_version(browser, 2)
    # The changed value is marked (it flashes); the unchanged one next to it is not re-marked.
    changed = browser.execute_script(
        "const at = (p) => [...document.querySelectorAll('[data-testid=tree] .jnode')].find((n) => n.dataset.pointer === p);"
        "return [at('/players/0/level').dataset.changed ?? null, at('/players/0/name').dataset.changed ?? null];")
    assert changed == ["2", None], changed


def test_fire_from_the_form(browser, dashboard):
    server, url = dashboard()
    browser.get(url)
    wait_connected(browser, version=0)

    # An example, as is.
    browser.find_element(By.CSS_SELECTOR, '[data-example="increment"]').click()
    fire_button = by_testid(browser, "fire-button")
    assert fire_button.is_enabled()
    fire_button.click()
    wait_for(browser, lambda d: text_of(d, "fired-version") == "1", "the form never reported version 1")
    wait_for_version(browser, 1)
    wait_for_value(browser, "/counter", 1)

    # Typed by hand, fired with Ctrl+Enter.
    editor = by_testid(browser, "editor")
    type_into(editor, '{"type": "set", "path": "/greeting", "value": "héllo"}')
    editor.send_keys(Keys.CONTROL, Keys.ENTER)
    wait_for_version(browser, 2)
    wait_for_value(browser, "/greeting", "héllo")
    assert get_state(server) == {"counter": 1, "greeting": "héllo"}


def test_invalid_json_disables_fire(browser, dashboard):
    server, url = dashboard()
    browser.get(url)
    wait_connected(browser)
    editor = by_testid(browser, "editor")
    fire_button = by_testid(browser, "fire-button")
    assert not fire_button.is_enabled()  # empty

    type_into(editor, '{"type": "set",\n"path": }')
    validation = by_testid(browser, "validation")
    wait_for(browser, lambda d: validation.get_attribute("data-state") == "error", "no parse error was shown")
    assert "Line 2" in validation.text, validation.text
    assert not fire_button.is_enabled()

    type_into(editor, '{"type": "set", "path": "/a", "value": 1}')
    wait_for(browser, lambda d: fire_button.is_enabled(), "Fire stayed disabled for valid JSON")
    assert validation.get_attribute("data-state") == "ok"


def test_rejected_event_shows_the_problem(browser, dashboard):
    server, url = dashboard()
    bad = {"type": "remove", "path": "/nothing/here"}
    expected = request(server, "POST", "/events", body=bad)  # rejected, so the state stays as it was
    assert expected.status == 422, expected
    problem = expected.json()

    browser.get(url)
    wait_connected(browser, version=0)
    type_into(by_testid(browser, "editor"), json.dumps(bad))
    by_testid(browser, "fire-button").click()
    box = by_testid(browser, "error")
    wait_for(browser, lambda d: box.is_displayed(), "no error was shown")
    assert by_testid(browser, "error-status").text == "422"
    assert by_testid(browser, "error-title").text == problem["title"]
    assert by_testid(browser, "error-detail").text == problem["detail"]
    assert problem["type"] in box.text

    # An unknown type: the problem lists the known ones.
    type_into(by_testid(browser, "editor"), '{"type": "explode"}')
    by_testid(browser, "fire-button").click()
    wait_for(browser, lambda d: "knownTypes" in box.text and "increment" in box.text, "the known types were not shown")
    assert text_of(browser, "version") == "0"


def test_path_in_the_url_shows_only_that_subtree(browser, dashboard):
    server, url = dashboard()
    fire(server, {"type": "set", "path": "", "value": {"players": [{"name": "Ayla", "level": 3}, {"name": "Bo", "level": 1}], "counter": 5}})

    browser.get(f"{url}#path=/players/1")
    wait_connected(browser)
    wait_for_value(browser, "/players/1/name", "Bo")
    assert by_testid(browser, "path-input").get_attribute("value") == "/players/1"
    assert set(tree_pointers(browser)) == {"/players/1", "/players/1/name", "/players/1/level"}

    fire(server, {"type": "increment", "path": "/players/1/level"})
    wait_for_value(browser, "/players/1/level", 2)
    fire(server, {"type": "increment", "path": "/counter"})  # outside the selection: nothing changes here
    wait_for_version(browser, 3)
    assert set(tree_pointers(browser)) == {"/players/1", "/players/1/name", "/players/1/level"}

    # The whole state again, and the address follows.
    by_testid(browser, "path-clear").click()
    wait_for_value(browser, "/counter", 6)
    assert "path=" not in browser.current_url

    # Typing a pointer puts it in the address, so the link opens straight to it.
    type_into(by_testid(browser, "path-input"), "/players/0")
    by_testid(browser, "path-apply").click()
    wait_for_value(browser, "/players/0/name", "Ayla")
    assert browser.current_url.endswith("#path=/players/0")
    assert "/counter" not in tree_pointers(browser)

    # ?path= works too; a primitive is shown on its own.
    browser.get(with_query(url, "path", "/counter"))
    wait_connected(browser)
    wait_for_value(browser, "/counter", 6)
    assert tree_pointers(browser) == ["/counter"]


def test_token_is_asked_for_and_used(browser, dashboard):
    server, url = dashboard("--token", f"dash:{TOKEN}:read+fire")
    browser.get(url)
    wait_for(browser, lambda d: d.execute_script("return document.querySelector('[data-testid=status]').dataset.status") == "unauthorized",
             "the dashboard did not say it needs a token")
    dialog = by_testid(browser, "token-dialog")
    assert dialog.is_displayed()

    type_into(by_testid(browser, "token-input"), "wrong")
    by_testid(browser, "token-save").click()
    wait_for(browser, lambda d: dialog.is_displayed() and "refused" in dialog.text, "a wrong token was not refused")

    type_into(by_testid(browser, "token-input"), TOKEN)
    by_testid(browser, "token-save").click()
    wait_connected(browser, version=0)
    type_into(by_testid(browser, "editor"), '{"type": "set", "path": "/secured", "value": true}')
    by_testid(browser, "fire-button").click()
    wait_for_value(browser, "/secured", True)

    # Kept for the tab: a reload connects straight away.
    browser.refresh()
    wait_connected(browser, version=1)
    assert not by_testid(browser, "token-dialog").is_displayed()


# ---------------------------------------------------------------------------------------------
# History: the event log and time travel (GET /history, GET /state?version=N)


def test_event_log_lists_recent_events_newest_first(browser, dashboard):
    server, url = dashboard()
    answer = fire(server, [{"type": "increment", "path": "/counter"}] * 60)
    assert answer["version"] == 60

    browser.get(url)
    wait_connected(browser, version=60)
    wait_for(browser, lambda d: len(log_versions(d)) == 50, "the log did not load the last 50 events")
    assert log_versions(browser) == list(range(60, 10, -1))

    fire(server, {"type": "set", "path": "/players/0", "value": {"name": "Ayla"}})
    wait_for(browser, lambda d: log_versions(d)[:1] == [61], "the new event did not appear at the top of the log")
    top = browser.find_element(By.CSS_SELECTOR, '[data-testid=event-log] [data-version="61"]')
    assert "set" in top.text and "/players/0" in top.text, top.text


def test_scrubbing_history_shows_past_versions(browser, dashboard):
    server, url = dashboard()
    for value in (1, 2, 3):
        fire(server, {"type": "set", "path": "/counter", "value": value})
    fire(server, {"type": "set", "path": "/name", "value": "Ayla"})  # version 4

    browser.get(url)
    wait_connected(browser, version=4)
    scrub = by_testid(browser, "scrub")
    wait_for(browser, lambda d: scrub.is_enabled(), "time travel stayed disabled")
    assert scrub.get_attribute("max") == "4"
    assert int(scrub.get_attribute("min")) <= 1

    # The slider, by keyboard: to the oldest, then forward to version 1.
    scrub.send_keys(Keys.HOME)
    for _ in range(1 - int(scrub.get_attribute("min"))):
        scrub.send_keys(Keys.ARROW_RIGHT)
    banner = by_testid(browser, "past-banner")
    wait_for(browser, lambda d: banner.is_displayed() and "Viewing version 1 (past)" in banner.text, "the banner never said version 1")
    wait_for_value(browser, "/counter", 1)
    assert tree_value(browser, "/name") is None

    # The number field.
    type_into(by_testid(browser, "scrub-version"), "2")
    by_testid(browser, "scrub-version").send_keys(Keys.ENTER)
    wait_for_value(browser, "/counter", 2)
    assert "Viewing version 2 (past)" in banner.text

    # Live changes go on meanwhile, without touching the past view.
    fire(server, {"type": "set", "path": "/counter", "value": 5})  # version 5
    wait_for_version(browser, 5)
    assert tree_value(browser, "/counter") == "2"

    by_testid(browser, "live-button").click()
    wait_for_value(browser, "/counter", 5)
    wait_for_value(browser, "/name", "Ayla")
    assert not banner.is_displayed()

    # A click on an event in the log shows the state right after it.
    browser.find_element(By.CSS_SELECTOR, '[data-testid=event-log] [data-version="3"]').click()
    wait_for_value(browser, "/counter", 3)
    assert "Viewing version 3 (past)" in banner.text
    by_testid(browser, "live-button").click()
    wait_for_value(browser, "/counter", 5)


def test_scrubbing_a_subtree_selected_in_the_url(browser, dashboard):
    server, url = dashboard()
    fire(server, {"type": "set", "path": "/players", "value": [{"name": "Ayla", "level": 1}]})
    fire(server, {"type": "increment", "path": "/players/0/level"})
    fire(server, {"type": "set", "path": "/other", "value": True})

    browser.get(f"{url}#path=/players/0")
    wait_connected(browser, version=3)
    wait_for_value(browser, "/players/0/level", 2)
    wait_for(browser, lambda d: by_testid(d, "scrub").is_enabled(), "time travel stayed disabled")
    type_into(by_testid(browser, "scrub-version"), "1")
    by_testid(browser, "scrub-version").send_keys(Keys.ENTER)
    wait_for_value(browser, "/players/0/level", 1)
    assert set(tree_pointers(browser)) == {"/players/0", "/players/0/name", "/players/0/level"}


# ---------------------------------------------------------------------------------------------
# A browser's own EventSource


def test_an_eventsource_reconnecting_to_a_server_that_started_over_gets_its_state(browser, reactord, tmp_path):
    """A page's plain `EventSource` on /stream, whose server is replaced (same port) by one of
    another history already past the page's version: the browser reconnects by itself, sending the
    last id it saw as Last-Event-ID, and must end with the new server's state, not the old one's
    with the new one's patches applied to it."""
    port = free_port()
    other = reactord("--data-dir", str(tmp_path / "other"))
    fire(other, {"type": "set", "path": "/from", "value": "other"})
    for _ in range(4):
        fire(other, {"type": "increment", "path": "/n"})
    assert other.stop() == 0
    first = reactord("--port", str(port))
    fire(first, {"type": "set", "path": "/from", "value": "first"})
    for _ in range(2):
        fire(first, {"type": "increment", "path": "/n"})
    browser.get(f"{first.base_url}/readyz")
    browser.execute_script("""
        window.received = [];
        window.ids = [];
        const source = new EventSource('/stream');
        for (const type of ['snapshot', 'patch', 'state'])
            source.addEventListener(type, (e) => { window.received.push(JSON.parse(e.data)); window.ids.push(e.lastEventId); });
    """)
    wait_for(browser, lambda d: d.execute_script("return window.received.length") == 1, "the stream's snapshot never came")
    assert first.stop() == 0
    second = reactord("--port", str(port), "--data-dir", str(tmp_path / "other"))
    assert get_state(second) == {"from": "other", "n": 4}
    wait_for(browser, lambda d: d.execute_script("return window.received.length") >= 2, "the EventSource never reconnected")
    time.sleep(0.3)  # anything the reconnection brought besides
    received, ids = browser.execute_script("return [window.received, window.ids]")
    state = None
    for message in received:
        state = message["state"] if message["type"] == "snapshot" else apply_patch(state, message["ops"])
    assert state == get_state(second), received
    assert received[1]["type"] == "snapshot" and received[1].get("resumed") is False, received
    assert received[0]["history"] != received[1]["history"]
    # Each id is the message's version at the history of the snapshot it follows.
    assert ids[:2] == [f"{m['version']}-{m['history']}" for m in received[:2]]
    assert all(id == f"{m['version']}-{received[1]['history']}" for id, m in zip(ids[2:], received[2:]))


# ---------------------------------------------------------------------------------------------
# A picture of it all


def test_overview_screenshot(browser, dashboard):
    """A realistic state and some traffic, saved as Tests/e2e/artifacts/dashboard.png."""
    server, url = dashboard()
    fire(server, {"type": "set", "path": "", "value": {
        "game": {"name": "Northreach", "round": 1, "status": "lobby"},
        "players": [
            {"name": "Ayla", "class": "mage", "level": 3, "hp": 42, "inventory": ["staff", "potion"]},
            {"name": "Bo", "class": "rogue", "level": 2, "hp": 31, "inventory": ["dagger"]},
        ],
        "settings": {"difficulty": "hard", "pvp": False, "motd": None, "maxPlayers": 8},
    }})
    for event in (
        {"type": "set", "path": "/game/status", "value": "running"},
        {"type": "increment", "path": "/players/0/level"},
        {"type": "append", "path": "/players/1/inventory", "value": "lockpick"},
        {"type": "merge", "path": "/settings", "value": {"pvp": True}},
        {"type": "increment", "path": "/game/round"},
    ):
        fire(server, event)

    browser.get(url)
    wait_connected(browser, version=6)
    wait_for_value(browser, "/game/round", 2)
    browser.find_element(By.CSS_SELECTOR, '[data-example="merge"]').click()
    fire(server, {"type": "increment", "path": "/players/1/hp", "by": -5})
    wait_for_value(browser, "/players/1/hp", 26)
    ARTIFACTS.mkdir(exist_ok=True)
    for scheme, name in (("light", "dashboard-light.png"), ("dark", "dashboard.png")):
        browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": [{"name": "prefers-color-scheme", "value": scheme}]})
        time.sleep(0.4)  # let the colour transitions finish
        browser.save_screenshot(str(ARTIFACTS / name))
        assert (ARTIFACTS / name).stat().st_size > 10_000
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
