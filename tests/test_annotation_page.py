"""The annotation page in real Chromium beyond the keyboard: mouse and touch, buttons, doubtful suggestions,
spans-mode edges and the missed-entity question, the keys and guidelines overlays, and the rounds plot."""

from __future__ import annotations

import json

import pytest

from tests.browser import needs_chromium
from tests.test_annotation import add_batch, make_session
from xling.annotation.options import AnnotateOptions
from xling.annotation.session import ROUNDS_FILE, Session
from xling.data.conll import read_conll
from xling.fileio import read_jsonl

pytestmark = needs_chromium


@pytest.fixture
def browser():
    from tests.browser import chromium

    with chromium() as driver:
        yield driver


def centre(driver, index: int) -> tuple[int, int]:
    """Where word `index` is on the screen (found first: the page draws the sentence anew as a drag goes)."""
    script = f"const r = document.querySelector('#sentence .word[data-index=\"{index}\"]').getBoundingClientRect();"
    return tuple(
        driver.execute_script(script + "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]")
    )


def drag(driver, start: tuple[int, int], end: tuple[int, int], pointer=None) -> None:
    """Press at `start`, move to `end`, let go: with the mouse, or with `pointer` (a finger)."""
    from selenium.webdriver.common.actions.action_builder import ActionBuilder

    actions = ActionBuilder(driver, mouse=pointer) if pointer else ActionBuilder(driver)
    actions.pointer_action.move_to_location(*start).pointer_down().move_to_location(*end).pointer_up()
    actions.perform()


def test_a_person_labels_with_the_mouse_and_then_by_touch_on_a_phone_sized_window(tmp_path, browser):
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    from tests.browser import served, wait_for

    directory = make_session(tmp_path)
    header, *items = read_jsonl(directory / "batches" / "0001.jsonl")
    items[0]["probabilities"] = [0.9, 0.9, 0.4, 0.9]  # the LOC on "Limapi" is a doubtful suggestion
    add_batch(directory, items)
    with served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        marks = browser.find_elements("css selector", "#sentence mark.entity")
        assert [m.get_attribute("class") for m in marks] == ["entity", "entity doubtful"]
        buttons = browser.find_elements("css selector", "#actions button, #legend button")
        assert len(buttons) == 9 and all(b.size["height"] >= 44 and b.size["width"] >= 44 for b in buttons)
        # drag over "Juan rimarqan": whole words, no text selection; the ORG button labels them
        drag(browser, centre(browser, 0), centre(browser, 1))
        assert browser.execute_script("return window.getSelection().toString()") == ""
        browser.find_element("css selector", '#legend button[data-type="ORG"]').click()
        browser.find_element("css selector", "#sentence mark.doubtful .badge").click()  # remove the LOC
        browser.find_element("css selector", 'button[data-action="accept"]').click()
        wait_for(
            browser,
            "window.xlingPage.item && window.xlingPage.item.id === 's2' && window.xlingPage.pending.length === 0",
        )
        browser.set_window_size(390, 844)
        finger = PointerInput(interaction.POINTER_TOUCH, "finger")

        def tap(selector: str) -> None:
            box = browser.find_element("css selector", selector).rect
            where = (round(box["x"] + box["width"] / 2), round(box["y"] + box["height"] / 2))
            drag(browser, where, where, finger)

        drag(browser, centre(browser, 0), centre(browser, 2), finger)  # "<script>", by touch
        tap('#legend button[data-type="ORG"]')
        tap('button[data-action="accept"]')
        wait_for(
            browser,
            "window.xlingPage.item && window.xlingPage.item.id === 's3' && window.xlingPage.pending.length === 0",
        )
    gold = [s.tags for s in read_conll(directory / "gold.conll")]
    assert gold == [["B-ORG", "I-ORG", "O", "O"], ["B-ORG", "I-ORG", "I-ORG"] + ["O"] * 8 + ["B-LOC"]]


def test_spans_mode_moves_each_edge_its_way_asks_about_a_missed_entity_first_and_shows_keys_and_guidelines(
    tmp_path, browser
):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.keys import Keys

    from tests.browser import press, served, wait_for

    directory = make_session(tmp_path, mode="spans")
    with served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        assert browser.find_element("css selector", 'button[data-action="reject"]').text == "r not an entity"

        def shift(key) -> None:
            ActionChains(browser).key_down(Keys.SHIFT).send_keys(key).key_up(Keys.SHIFT).perform()

        shift(Keys.ARROW_RIGHT)
        shift(Keys.ARROW_RIGHT)  # the right edge twice: "Juan rimarqan Limapi"
        shift(Keys.ARROW_LEFT)  # the left edge is at the first word already
        press(browser, Keys.ARROW_LEFT)  # without Shift, the right edge comes back one word
        assert browser.execute_script("return window.xlingPage.anchor + ',' + window.xlingPage.cursor") == "0,1"
        press(browser, Keys.ENTER)  # "Juan rimarqan" is the PER
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        # "<" may be an entity the model missed: asked at once, as a question, not as an error
        question = browser.find_element("id", "question").text
        assert (
            question.startswith("Is “<” an entity the model missed?")
            and browser.find_element("id", "status").text == ""
        )
        press(browser, "?")
        assert browser.execute_script("return document.getElementById('keys').open")
        assert "grow the span on that side" in browser.find_element("id", "keys").text
        press(browser, "r")  # a dialog is open: the sentence takes no key
        assert browser.execute_script("return window.xlingPage.item.id") == "s2"
        press(browser, Keys.ESCAPE, "h")
        wait_for(browser, "document.getElementById('guidelines-text').textContent.includes('Limapi')")
        assert browser.execute_script("return document.getElementById('guidelines').open")
        press(browser, Keys.ESCAPE, "r")
        wait_for(
            browser,
            "window.xlingPage.item && window.xlingPage.item.id === 's3' && window.xlingPage.pending.length === 0",
        )
    gold = [s.tags for s in read_conll(directory / "gold.conll")]
    assert gold == [["B-PER", "I-PER", "?", "?"], ["O"] + ["?"] * 11]


def test_the_rounds_are_plotted_against_the_start_with_axes_values_and_a_table(tmp_path, browser):
    from tests.browser import served, wait_for

    directory = make_session(tmp_path)
    rounds = [
        {"round": 0, "sentences": 0, "f1": 0.188, "adapter": "ner-en"},
        {"round": 1, "sentences": 25, "f1": 0.25, "previous_f1": 0.188, "kept": True, "adapter": "ner-qu-annotated"},
        {"round": 2, "sentences": 50, "f1": 0.21, "previous_f1": 0.25, "kept": False, "adapter": "ner-qu-annotated"},
    ]
    (directory / ROUNDS_FILE).write_text("".join(json.dumps(r) + "\n" for r in rounds))
    options = AnnotateOptions(session="qu", retrain=False, workspace=str(tmp_path))
    with served(Session(directory), options) as address:
        browser.get(address)
        wait_for(browser, "document.querySelectorAll('#rounds tr').length === 4")
        table = [row.text for row in browser.find_elements("css selector", "#rounds tr")]
        curve = browser.find_element("id", "curve")
        texts = [t.text for t in curve.find_elements("css selector", "text")]
        status = browser.find_element("id", "retraining").text
        use = browser.find_element("id", "use").text
        dropped = curve.find_elements("css selector", "circle.dropped")
    assert table == ["round answers dev F1 kept", "0 0 18.8 start", "1 25 25.0 yes", "2 50 21.0 no"]
    assert {"dev F1", "sentences answered", "25.0", "21.0"} <= set(texts) and len(dropped) == 1
    assert "scored lower, 21.0 against 25.0, and was not kept" in status
    assert use == f"tag with: xling tag --lang qu -t ner-qu-annotated -w {tmp_path} FILE"


def test_an_earlier_answer_opens_from_the_history_as_answered_and_the_edit_replaces_it(tmp_path, browser):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import press, served, wait_for

    directory = make_session(tmp_path)
    with served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        press(browser, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)  # s1 without the LOC on "Limapi"
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        press(browser, "s")
        wait_for(browser, "document.querySelectorAll('#history button').length === 2")
        entries = [b.text for b in browser.find_elements("css selector", "#history button")]
        assert entries == ["<script>alert(1)</script> Qusqu · skipped", "Juan rimarqan Limapi . · PER"]
        browser.find_elements("css selector", "#history button")[1].click()
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        assert browser.execute_script("return window.xlingPage.spans.map((s) => s.label)") == ["PER"]
        press(browser, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "1", Keys.ENTER)  # "Limapi" is a LOC after all
        wait_for(
            browser,
            "window.xlingPage.item && window.xlingPage.item.id === 's3' && window.xlingPage.pending.length === 0",
        )
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "B-LOC", "O"]
    events = [json.loads(line) for line in (directory / "answers.jsonl").read_text().splitlines()]
    assert [e["item"] for e in events] == ["s1", "s2", "s1"] and events[2]["replaces"] == events[0]["id"]


def test_two_people_answer_a_shared_sentence_under_their_names_and_one_settles_it_on_the_page(tmp_path, browser):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import press, served, wait_for

    directory = make_session(tmp_path)
    with served(Session(directory), AnnotateOptions(session="qu", retrain=False, overlap=1.0)) as address:
        browser.get(address)
        wait_for(browser, "document.getElementById('status').textContent.includes('give your name')")
        assert browser.execute_script("return window.xlingPage.item") is None  # nothing to answer without a name

        def name(person: str) -> None:
            field = browser.find_element("id", "annotator")
            field.clear()
            field.send_keys(person, Keys.TAB)  # typed keys are the field's, not the sentence's
            wait_for(browser, f"window.xlingPage.annotator === '{person}'")

        name("Ana")
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        press(browser, Keys.ENTER)  # s1 as suggested: Juan PER, Limapi LOC
        wait_for(
            browser,
            "window.xlingPage.item && window.xlingPage.item.id === 's2' && window.xlingPage.pending.length === 0",
        )
        name("Beto")
        wait_for(
            browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'"
        )  # Beto's stream starts with what he owes
        press(browser, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)  # Beto: no LOC
        wait_for(browser, "document.getElementById('agreement').textContent.includes('answered by two people')")
        browser.find_element("id", "review-button").click()  # Beto disagrees with Ana: he cannot settle it
        wait_for(browser, "document.querySelector('#review-list .who-settles')")
        assert "you answered it" in browser.find_element("css selector", "#review-list .who-settles").text
        assert not browser.find_elements("css selector", "#review-list button.choose")
        browser.find_element("css selector", "#review button.close").click()
        name("Cusi")  # who answered neither side
        browser.find_element("id", "review-button").click()
        wait_for(browser, "document.querySelectorAll('#review-list button.choose').length === 2")
        pair = browser.find_element("css selector", "#review-list .pairs p").text
        assert pair.startswith("Ana and Beto: 1 sentence(s), 4 words both judged; entity F1 66.7 [")
        per_type = [r.text for r in browser.find_elements("css selector", "#review-list .per-type tr")]
        assert per_type == ["type Ana Beto both F1", "LOC 1 0 0 0.0", "PER 1 1 1 100.0"]
        sides = [p.text for p in browser.find_elements("css selector", "#review-list .side p")]
        assert sides == ["Ana: Juan PER; Limapi LOC", "Beto: Juan PER"]
        choices = [b.text for b in browser.find_elements("css selector", "#review-list button.choose")]
        assert choices == ["take Ana's", "take Beto's"]
        browser.find_elements("css selector", "#review-list button.choose")[1].click()
        wait_for(browser, "document.querySelectorAll('#review-list button.choose').length === 0")
    assert read_conll(directory / "gold.conll")[0].tags == ["B-PER", "O", "O", "O"]
    events = [json.loads(line) for line in (directory / "answers.jsonl").read_text().splitlines()]
    assert [(e.get("annotator"), e["item"]) for e in events] == [("Ana", "s1"), ("Beto", "s1"), ("Cusi", "s1")]
    assert events[-1]["adjudicate"] == events[1]["id"]


def test_answers_made_while_the_server_is_down_survive_closing_the_page_and_arrive_once(tmp_path, browser):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import press, served, wait_for
    from tests.test_annotation import free_port

    directory = make_session(tmp_path)
    port, options = free_port(), AnnotateOptions(session="qu", retrain=False, annotator="Ana")
    with served(Session(directory), options, port) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
    press(browser, Keys.ENTER, "s")  # s1 accepted, s2 skipped: the server is gone
    wait_for(browser, "document.getElementById('status').textContent.includes('out of reach')")
    assert "2 being saved" in browser.find_element("id", "progress").text
    leaving = (
        "const e = new Event('beforeunload', {cancelable: true}); window.dispatchEvent(e); return e.defaultPrevented"
    )
    assert browser.execute_script(leaving)  # closing the page now asks first
    browser.get("about:blank")  # closed all the same
    assert not (directory / "answers.jsonl").exists()
    with served(Session(directory), options, port) as address:
        browser.get(address)  # the page again, the server again: what was unsent goes now
        wait_for(browser, "window.xlingPage.state && window.xlingPage.pending.length === 0", timeout=20)
        browser.refresh()  # and once only
        wait_for(browser, "window.xlingPage.state && window.xlingPage.pending.length === 0")
    events = [json.loads(line) for line in (directory / "answers.jsonl").read_text().splitlines()]
    assert [(e["item"], e.get("skip", False), e["annotator"]) for e in events] == [
        ("s1", False, "Ana"),
        ("s2", True, "Ana"),
    ]


@pytest.mark.slow
def test_answers_kept_for_one_session_never_go_to_another_served_later_at_the_same_address(tmp_path, browser):
    """Sessions from one pool share sentence ids: the page keeps its answers under its session's id, a tab of a
    session no longer served stops, and its answers wait, shown, until their own session's page sends them."""
    from selenium.webdriver.common.keys import Keys

    from tests.browser import press, served, wait_for
    from tests.test_annotation import free_port

    ov, qu = make_session(tmp_path, name="ov"), make_session(tmp_path)
    port = free_port()
    with served(Session(ov), AnnotateOptions(session="ov", retrain=False, annotator="Ana"), port) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        press(browser, Keys.ENTER)
        wait_for(
            browser,
            "window.xlingPage.pending.length === 0 && window.xlingPage.item && window.xlingPage.item.id === 's2'",
        )
    press(browser, Keys.ENTER, "s")  # two answers while the server is down
    wait_for(browser, "document.getElementById('status').textContent.includes('out of reach')")
    with served(Session(qu), AnnotateOptions(session="qu", retrain=False, annotator="Ana"), port) as address:
        # the tab of ov, still open, is told its session is gone here, and claims nothing of qu
        wait_for(browser, "window.xlingPage.gone", timeout=20)
        assert browser.execute_script("return window.xlingPage.pending.length") == 2
        browser.get(address)  # qu's page in the same browser: ov's answers are shown waiting, never sent
        wait_for(browser, "window.xlingPage.state && window.xlingPage.item")
        waiting = browser.find_element("id", "elsewhere").text
        assert "2 answer(s) wait for session ov" in waiting, waiting
    assert not (qu / "answers.jsonl").exists()
    with served(Session(ov), AnnotateOptions(session="ov", retrain=False, annotator="Ana"), port) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.state && window.xlingPage.pending.length === 0", timeout=20)
    events = [json.loads(line) for line in (ov / "answers.jsonl").read_text().splitlines()]
    assert [(e["item"], e.get("skip", False)) for e in events] == [("s1", False), ("s2", False), ("s3", True)]


def test_every_dialog_closes_by_touch_and_every_tap_target_is_44_px_on_a_phone(tmp_path, browser):
    from selenium.webdriver.common.actions import interaction
    from selenium.webdriver.common.actions.action_builder import ActionBuilder
    from selenium.webdriver.common.actions.pointer_input import PointerInput

    from tests.browser import served, wait_for

    directory = make_session(tmp_path)
    browser.set_window_size(390, 844)
    with served(Session(directory), AnnotateOptions(session="qu", retrain=False, annotator="Ana")) as address:
        browser.get(address)
        wait_for(browser, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        finger = PointerInput(interaction.POINTER_TOUCH, "finger")

        def tap(selector: str) -> None:
            x, y = browser.execute_script(
                f"const r = document.querySelector('{selector}').getBoundingClientRect();"
                "return [Math.round(r.x + r.width / 2), Math.round(r.y + r.height / 2)]"
            )
            actions = ActionBuilder(browser, mouse=finger)
            actions.pointer_action.move_to_location(x, y).pointer_down().pointer_up()
            actions.perform()

        for opener, dialog in (
            ('button[data-action="keys"]', "keys"),
            ('button[data-action="guidelines"]', "guidelines"),
        ):
            tap(opener)
            wait_for(browser, f"document.getElementById('{dialog}').open")
            tap(f"#{dialog} button.close")
            wait_for(browser, f"!document.getElementById('{dialog}').open")
        small = browser.execute_script(
            "return [...document.querySelectorAll('button, .badge, a')].filter((e) => e.offsetParent !== null)"
            ".map((e) => [e.textContent, e.getBoundingClientRect()])"
            ".filter(([, r]) => r.width < 44 || r.height < 44).map(([t]) => t)"
        )
        assert small == [], small
        html = browser.execute_script("return document.getElementById('guidelines-text').innerHTML")
    assert "<h1>" in html or "<h2>" in html  # Markdown, rendered


def open_as(driver, address: str, person: str) -> None:
    """The page in `driver`, asking for a name in a shared session, given `person`'s."""
    from selenium.webdriver.common.keys import Keys

    from tests.browser import wait_for

    driver.get(address)
    wait_for(driver, "document.getElementById('status').textContent.includes('give your name')")
    driver.find_element("id", "annotator").send_keys(person, Keys.TAB)
    wait_for(driver, f"window.xlingPage.annotator === '{person}' && window.xlingPage.state")


def test_two_profiles_never_share_a_sentence_a_new_profile_shows_the_persons_history_and_undo_keeps_corrections(
    tmp_path, monkeypatch
):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import chromium, press, served, wait_for
    from xling.annotation import team

    monkeypatch.setattr(team, "HOLD", 2)  # four sentences: two each
    directory = make_session(tmp_path)

    Session(directory).record({"item": "s4", "spans": [], "judged": None}, "Cusi")  # a team's session
    options = AnnotateOptions(session="qu", retrain=False)
    with served(Session(directory), options) as address, chromium() as ana, chromium() as beto:
        open_as(ana, address, "Ana")
        open_as(beto, address, "Beto")
        shown = "return [window.xlingPage.item && window.xlingPage.item.id, ...window.xlingPage.queue.map((i) => i.id)]"
        wait_for(ana, "window.xlingPage.item")
        wait_for(beto, "window.xlingPage.item")
        assert ana.execute_script(shown) == ["s1", "s2"] and beto.execute_script(shown) == ["s3"]
        progress = ana.find_element("id", "progress").text, beto.find_element("id", "progress").text
        assert "3 to go (2 held for you)" in progress[0] and "3 to go (1 held for you)" in progress[1], progress
        press(ana, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)  # s1: Ana corrects the model: no LOC
        wait_for(
            ana, "window.xlingPage.item && window.xlingPage.item.id === 's2' && window.xlingPage.pending.length === 0"
        )
        press(ana, "3", Keys.ENTER)  # s2: Ana corrects it too: its first word a PER
        wait_for(
            ana, "window.xlingPage.pending.length === 0 && document.querySelectorAll('#history button').length === 2"
        )
        press(ana, "u")  # takes back s2, shown again with its answer
        wait_for(ana, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        press(ana, "u")  # takes back s1: shown with Ana's correction, not the model's LOC
        wait_for(ana, "window.xlingPage.item && window.xlingPage.item.id === 's1'")
        assert ana.execute_script("return window.xlingPage.spans.map((s) => s.label)") == ["PER"]
        wait_for(ana, "document.querySelectorAll('#history button').length === 0")  # the list follows
        press(ana, Keys.ENTER)  # Enter keeps the correction
        wait_for(
            ana, "window.xlingPage.pending.length === 0 && document.querySelectorAll('#history button').length === 1"
        )
        # s2, taken back by the first undo, comes back with Ana's correction too, never the model's suggestion
        wait_for(ana, "window.xlingPage.item && window.xlingPage.item.id === 's2'")
        assert ana.execute_script("return window.xlingPage.spans.map((s) => s.label)") == ["PER", "LOC"]
        press(ana, Keys.ENTER)
        wait_for(
            ana, "window.xlingPage.pending.length === 0 && document.querySelectorAll('#history button').length === 2"
        )
        with chromium() as elsewhere:  # Ana in a new browser profile: her history, from the server
            open_as(elsewhere, address, "Ana")
            wait_for(elsewhere, "document.querySelectorAll('#history button').length === 2")
            assert elsewhere.find_elements("css selector", "#history button")[1].text == "Juan rimarqan Limapi . · PER"
    gold = {tuple(s.tokens): s.tags for s in read_conll(directory / "gold.conll")}
    assert gold[("Juan", "rimarqan", "Limapi", ".")] == ["B-PER", "O", "O", "O"]
    assert [tags for tokens, tags in gold.items() if tokens[-1] == "Qusqu"] == [["B-PER"] + ["O"] * 10 + ["B-LOC"]]


def test_with_overlap_both_answers_survive_a_new_batch_and_a_restart_in_two_profiles(tmp_path):
    from selenium.webdriver.common.keys import Keys

    from tests.browser import chromium, press, served, wait_for
    from tests.test_annotation import free_port

    directory = make_session(tmp_path)
    options, port = AnnotateOptions(session="qu", retrain=False, overlap=1.0), free_port()

    with chromium() as ana, chromium() as beto:
        with served(Session(directory), options, port) as address:
            open_as(ana, address, "Ana")
            wait_for(ana, "window.xlingPage.item")
            press(ana, Keys.ENTER)  # s1 as suggested
            wait_for(
                ana,
                "window.xlingPage.pending.length === 0 && window.xlingPage.item && window.xlingPage.item.id === 's2'",
            )
        header, *items = read_jsonl(directory / "batches" / "0001.jsonl")  # a round's new batch, then a restart
        add_batch(directory, [items[2] | {"id": "n1"}])
        with served(Session(directory), options, port) as address:
            open_as(beto, address, "Beto")
            wait_for(beto, "window.xlingPage.item")
            shown = "return [window.xlingPage.item.id, ...window.xlingPage.queue.map((i) => i.id)]"
            assert beto.execute_script(shown) == ["n1", "s1"]  # the new batch, then what Beto still owes
            press(beto, Keys.ENTER, Keys.ARROW_RIGHT, Keys.ARROW_RIGHT, "x", Keys.ENTER)  # n1; s1 without the LOC
            wait_for(beto, "window.xlingPage.pending.length === 0 && !window.xlingPage.item")
    events = [json.loads(line) for line in (directory / "answers.jsonl").read_text().splitlines()]
    assert [(e["annotator"], e["item"]) for e in events] == [("Ana", "s1"), ("Beto", "n1"), ("Beto", "s1")]
    assert {e["slot"] for e in events if e["item"] == "s1"} == {"Ana", "Beto"}
