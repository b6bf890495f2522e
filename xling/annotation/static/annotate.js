// The labelling page of `xling annotate`: keyboard first, every answer posted at once (in order, retried until
// the server has it). Corpus text only ever goes into the page as text nodes, never as markup.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
// Every change the page asks for carries the token the server wrote into it: no other site can read it.
const PAGE_TOKEN = document.querySelector('meta[name="xling-page-token"]').content;
// The session this page belongs to: its stored answers are kept under it, and every request names it, so that
// another session served later at the same address never takes them (nor this tab its sentences).
const SESSION_ID = document.querySelector('meta[name="xling-session"]').content;
const IDLE_MS = 2 * 60 * 1000;  // no key for this long: the person is away, and the tab claims no sentences
const DOUBTFUL = 0.6;  // a suggested entity whose tags' mean probability is below this is drawn dashed
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"];
// Every request carries an id made here, so that the server takes a retried one once; every answer, this tab's
// id (undo takes back only this tab's answers) and the item's version it saw (an answer given meanwhile in another
// tab or by another person is not overwritten unasked).
function newId() { return Array.from(crypto.getRandomValues(new Uint8Array(12)), (b) => b.toString(16).padStart(2, "0")).join(""); }
const TAB = sessionStorage.getItem("xling-tab") || newId();  // a reload keeps the tab's answers its own
sessionStorage.setItem("xling-tab", TAB);
// The name is the tab's (a new tab starts from the name last given in this browser); each answer carries the
// name it was given under, so a later change of name never moves an answer to someone else.
const page = {
  state: null, queue: [], item: null, spans: [], cursor: 0, anchor: null,
  pending: [], sending: false, latencies: [], conflicts: [], restore: null, texts: new Map(), editing: null,
  reviewing: null, historyShown: 0, gone: false, lastKey: Date.now(),
  takenBack: new Map(),  // item -> the answer an undo took back: shown again whenever that sentence comes back
  annotator: sessionStorage.getItem("xling-annotator") || localStorage.getItem("xling-annotator") || "",
};

// Nothing lives only in the page: unsent answers and unsettled conflicts are kept in the browser's storage
// (one list for every tab of this session, whatever address serves it) until the server has them, and sent again
// after a reload.
const STORE = `xling:${SESSION_ID}`;
function stored(kind) {
  try { return JSON.parse(localStorage.getItem(`${STORE}:${kind}`)) || []; } catch { return []; }
}
function keep(kind, entries) { localStorage.setItem(`${STORE}:${kind}`, JSON.stringify(entries)); }
function remember(kind, entry, id) { keep(kind, [...stored(kind).filter((e) => id(e) !== id(entry)), entry]); }
function forget(kind, key, id) { keep(kind, stored(kind).filter((e) => id(e) !== key)); }
const answerId = (answer) => answer.id;
const conflictId = (c) => c.mine.id;
window.addEventListener("beforeunload", (event) => {
  if (page.pending.length || page.conflicts.length) { event.preventDefault(); event.returnValue = ""; }
});
window.xlingPage = page; // read by the browser test and the latency bench

function api(path, body) {
  const headers = { "Content-Type": "application/json", "X-Xling-Page-Token": PAGE_TOKEN, "X-Xling-Session": SESSION_ID };
  if (TOKEN) headers["X-Xling-Token"] = TOKEN;
  const init = body === undefined ? { headers } : { method: "POST", headers, body: JSON.stringify(body), keepalive: true };
  return fetch(path, init).then(async (response) => {
    const data = await response.json();
    if (response.status === 410) gone(data.error);
    if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { status: response.status, data });
    return data;
  });
}

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function say(message) { document.getElementById("status").textContent = message || ""; }

// This tab's session is no longer served here: it stops asking for sentences and keeps what it has not sent.
function gone(message) {
  page.gone = true;
  page.queue = [];
  page.item = null;
  document.getElementById("sentence").replaceChildren(el("p", "", "This session is no longer served at this address."));
  say(message);
}

// Answers this browser keeps for other sessions: kept until their own session's page sends them.
function renderElsewhere() {
  const lines = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    const match = /^xling:([0-9a-f]+):unsent$/.exec(key || "");
    if (!match || match[1] === SESSION_ID) continue;
    let count = 0;
    try { count = (JSON.parse(localStorage.getItem(key)) || []).length; } catch { count = 0; }
    const name = localStorage.getItem(`xling:${match[1]}:name`) || "another session";
    if (count) lines.push(`${count} answer(s) wait for session ${name}: serve it (xling annotate ${name}) and open its page to send them`);
  }
  document.getElementById("elsewhere").textContent = lines.join("; ");
}

// A question the page asks before any key is pressed (spans mode: a possible entity the model missed).
function ask(question) { document.getElementById("question").textContent = question || ""; }

// The model's suggestions: entities from its IOB2 tags, each with the mean probability of its tags.
function suggestions(item) {
  const spans = [];
  item.tags.forEach((tag, i) => {
    const last = spans[spans.length - 1];
    if (tag.startsWith("I-") && last && last.end === i && last.label === tag.slice(2)) {
      last.end = i + 1;
      last.sum += item.probabilities[i];
    } else if (tag !== "O") {
      spans.push({ start: i, end: i + 1, label: tag.slice(2), sum: item.probabilities[i] });
    }
  });
  return spans.map((s) => ({ start: s.start, end: s.end, label: s.label, confidence: s.sum / (s.end - s.start) }));
}

function show(item) {
  page.item = item;
  page.anchor = null;
  ask("");
  if (!item) { page.spans = []; render(); return; }
  page.texts.set(item.id, item.text);
  if (!(page.restore && page.restore.item === item.id) && page.takenBack.has(item.id)) {
    page.restore = page.takenBack.get(item.id);  // taken back by an earlier undo: the person's own labels
    say("taken back earlier: your answer is shown, to correct");
  }
  if (page.restore && page.restore.item === item.id) {
    page.spans = (page.restore.spans || []).map((s) => ({ ...s }));  // what was answered, to correct
    const first = page.spans[0];
    if (page.state.mode === "spans") {
      const [start, end] = first ? [first.start, first.end] : [item.focus.start, item.focus.end];
      [page.anchor, page.cursor] = [start, end - 1];
    } else page.cursor = first ? first.start : 0;
    page.restore = null;
  } else if (page.state.mode === "spans") {
    const f = item.focus;
    page.spans = f.label ? [{ start: f.start, end: f.end, label: f.label, confidence: f.confidence }] : [];
    page.cursor = f.end - 1;
    page.anchor = f.start;
    if (!f.label) ask(missedQuestion(item));
  } else {
    page.spans = suggestions(item);
    page.cursor = 0;
  }
  render();
}

function missedQuestion(item) {
  const words = item.words.slice(item.focus.start, item.focus.end).map(([s, e]) => item.text.slice(s, e)).join(" ");
  return `Is “${words}” an entity the model missed? Press its type (1-9), or r if it is none.`;
}

function selection() {
  const a = page.anchor === null ? page.cursor : page.anchor;
  return [Math.min(a, page.cursor), Math.max(a, page.cursor) + 1];
}

function colour(label) { return COLOURS[Math.max(0, page.state.types.indexOf(label)) % COLOURS.length]; }

function render() {
  const box = document.getElementById("sentence");
  box.replaceChildren();
  const item = page.item;
  if (!item) {
    const why = page.gone ? "This session is no longer served at this address."
      : page.state && page.state.needs_name ? "Give your name above to start."
      : page.state && page.state.retraining.running ? "Retraining: the next batch comes when it is done."
      : "Nothing left to label in this session.";
    box.append(el("p", "", why));
    renderSide();
    return;
  }
  const [selStart, selEnd] = selection();
  const focus = page.state.mode === "spans" ? item.focus : null;
  let at = 0;
  let group = null;
  item.words.forEach(([start, end], i) => {
    const gap = item.text.slice(at, start);
    const span = page.spans.find((s) => s.start <= i && i < s.end);
    if (group && (!span || span !== group.span)) group = null;
    if (span && !group) {
      const mark = el("mark", "entity" + (focus && span.start === focus.start && span.end === focus.end ? " focus" : ""));
      if (span.confidence !== undefined && span.confidence < DOUBTFUL) mark.classList.add("doubtful");
      mark.style.setProperty("--c", colour(span.label));
      group = { span, mark };
      box.append(gap, mark);
    } else {
      (group ? group.mark : box).append(gap);
    }
    const word = el("span", "word", item.text.slice(start, end));
    word.dataset.index = i;
    if (i === page.cursor) word.classList.add("cursor");
    if (page.anchor !== null && selStart <= i && i < selEnd) word.classList.add("selected");
    if (focus && !focus.label && focus.start <= i && i < focus.end) word.classList.add("selected");
    (group ? group.mark : box).append(word);
    if (group && i === span.end - 1) {
      const conf = span.confidence === undefined ? "" : ` ${Math.round(100 * span.confidence)}%`;
      const badge = el("span", "badge", span.label + conf);
      badge.title = "click to remove";
      badge.dataset.start = span.start;
      group.mark.append(badge);
      group = null;
    }
    at = end;
  });
  box.append(item.text.slice(at));
  renderSide();
}

function renderSide() {
  const state = page.state;
  if (!state) return;
  const p = state.progress;
  const types = Object.entries(p.entities).map(([t, n]) => `${t} ${n}`).join(", ");
  const unsaved = page.pending.length ? ` · ${page.pending.length} being saved` : "";
  const mine = page.queue.length + (page.item ? 1 : 0);
  const waiting = Math.max(p.waiting ?? mine, mine);  // in a shared session, the person holds only their share
  const held = waiting > mine && !state.needs_name ? ` (${mine} held for you)` : "";  // nobody's before a name
  const halfway = p.halfway ? ` (${p.halfway} of them answered once, waiting for a second person)` : "";
  document.getElementById("progress").textContent =
    `${p.answered - (p.halfway || 0)} done, ${waiting} to go${held}${halfway} · ${p.words} words judged${types ? " · " + types : ""}${unsaved}`;
  document.getElementById("people").textContent = Object.entries(p.people || {}).map(([name, n]) => `${name} ${n}`).join(" · ");
  const r = state.retraining;
  const rounds = r.rounds.filter((round) => round.round > 0);
  const last = rounds[rounds.length - 1];
  const minutes = (seconds) => `${Math.floor(seconds / 60)}:${String(Math.round(seconds % 60)).padStart(2, "0")}`;
  document.getElementById("retraining").textContent = r.running
    ? `training ${r.adapter}: ${minutes(r.elapsed || 0)} so far` + (r.estimate ? `, the last round took ${minutes(r.estimate)}` : "")
    : r.failed ? `the last round failed: ${r.failed}`
    : last ? `${rounds.length} round(s); the session's adapter is ${last.adapter}` + (last.kept ? "" : ` (the last round scored lower, ${(100 * last.f1).toFixed(1)} against ${(100 * last.previous_f1).toFixed(1)}, and was not kept)`)
    : r.every ? `after every ${r.every} answers` : "off";
  drawCurve(r.rounds);
  roundsTable(r.rounds);
  renderAgreement(p);
  document.getElementById("use").textContent = r.use ? `tag with: ${r.use}` : "";
  document.getElementById("advice").textContent = r.advice || "";
  document.getElementById("warnings").textContent = (state.warnings || []).join("; ");
}

// Dev F1 after each round (filled: kept as the session's adapter; hollow: scored lower and dropped), against
// where the session started (round 0, dashed), with labelled axes and the values written out.
function drawCurve(rounds) {
  const svg = document.getElementById("curve");
  svg.replaceChildren();
  const points = rounds.filter((round) => round.f1 !== null && round.f1 !== undefined);
  if (!points.length) return;
  const ns = "http://www.w3.org/2000/svg";
  const add = (tag, attributes, text) => {
    const node = document.createElementNS(ns, tag);
    Object.entries(attributes).forEach(([k, v]) => node.setAttribute(k, v));
    if (text !== undefined) node.textContent = text;
    svg.append(node);
    return node;
  };
  const [left, right, top, bottom] = [34, 270, 12, 130];
  const most = Math.max(1, ...points.map((p) => p.sentences));
  const x = (sentences) => left + (right - left) * (sentences / most);
  const y = (f1) => bottom - (bottom - top) * f1;
  add("line", { x1: left, y1: bottom, x2: right, y2: bottom, stroke: "#333" });
  add("line", { x1: left, y1: top, x2: left, y2: bottom, stroke: "#333" });
  [0, 0.5, 1].forEach((f) => add("text", { x: left - 4, y: y(f) + 4, "text-anchor": "end", "font-size": 10 }, String(100 * f)));
  add("text", { x: (left + right) / 2, y: bottom + 26, "text-anchor": "middle", "font-size": 11 }, "sentences answered");
  add("text", { x: 10, y: (top + bottom) / 2, "font-size": 11, transform: `rotate(-90 10 ${(top + bottom) / 2})`, "text-anchor": "middle" }, "dev F1");
  add("text", { x: right, y: bottom + 13, "text-anchor": "end", "font-size": 10 }, String(most));
  const start = points.find((p) => p.round === 0);
  if (start) add("line", { x1: left, y1: y(start.f1), x2: right, y2: y(start.f1), stroke: "#888", "stroke-dasharray": "4 3" });
  points.filter((p) => p.round > 0).forEach((p) => {
    const kept = p.kept !== false;
    add("circle", { cx: x(p.sentences), cy: y(p.f1), r: 4, fill: kept ? "#1f77b4" : "white", stroke: "#1f77b4", class: kept ? "kept" : "dropped" });
    add("text", { x: x(p.sentences), y: y(p.f1) - 7, "text-anchor": "middle", "font-size": 10 }, (100 * p.f1).toFixed(1));
  });
}

function roundsTable(rounds) {
  const table = document.getElementById("rounds");
  table.replaceChildren();
  if (!rounds.length) return;
  const head = el("tr");
  ["round", "answers", "dev F1", "kept"].forEach((h) => head.append(el("th", "", h)));
  table.append(head);
  rounds.forEach((round) => {
    const row = el("tr");
    const kept = round.round === 0 ? "start" : round.kept === false ? "no" : "yes";
    [round.round, round.sentences, round.f1 === null ? "–" : (100 * round.f1).toFixed(1), kept].forEach((v) => row.append(el("td", "", String(v))));
    table.append(row);
  });
}

// The types as buttons (a tap labels the selection), the keys in a line and in the `?` overlay, the guidelines.
function renderLegend() {
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  page.state.types.slice(0, 9).forEach((type, i) => {
    const entry = el("button", "type");
    entry.dataset.type = type;
    entry.append(el("span", "key", String(i + 1)), type);
    entry.style.color = colour(type);
    legend.append(entry);
  });
  const spans = page.state.mode === "spans";
  const reject = document.querySelector('button[data-action="reject"]');
  reject.querySelector(".key").textContent = spans ? "r" : "x";
  reject.lastChild.textContent = spans ? " not an entity" : " remove entity";
  const help = spans
    ? [["Enter, a", "accept the span"], ["r", "not an entity"], ["1-9", "its type: answer and go on"], ["Shift+→ / Shift+←", "grow the span on that side"], ["→ / ←", "shrink it from the other side"], ["s", "skip"], ["u", "take back your last answer"]]
    : [["← / →", "move"], ["Shift+← / →", "select words"], ["1-9", "label the selection"], ["x, Backspace", "remove the entity here"], ["Enter, a", "accept the sentence"], ["s", "skip"], ["u", "take back your last answer"]];
  help.push(["?", "these keys"], ["h", "the guidelines"]);
  const line = document.getElementById("help");
  const list = document.getElementById("key-list");
  line.replaceChildren();
  list.replaceChildren();
  help.forEach(([key, what]) => {
    line.append(el("span", "key", key), what, " ");
    list.append(el("dt", "", key), el("dd", "", what));
  });
}

// Answers leave in the order given; one that fails for the network is tried again, one refused is reported.
function send(answer) {
  remember("unsent", answer, answerId);
  page.pending.push(answer);
  flush();
}

async function flush() {
  if (page.sending) return;
  page.sending = true;
  while (page.pending.length) {
    try {
      const data = await api("api/answer", page.pending[0]);
      forget("unsent", page.pending.shift().id, answerId);
      page.state.progress = data.progress;
      page.state.retraining = data.retraining;
      keepOnly(data.queue);
      say("");
    } catch (err) {
      if (err.status === 410) break;  // kept in storage for their own session
      if (err.status === 409) { conflict(page.pending[0], err); forget("unsent", page.pending.shift().id, answerId); continue; }
      if (err.status === 422 && !page.pending[0].annotator) { askName(); break; }
      if (err.status && err.status < 500) { forget("unsent", page.pending.shift().id, answerId); say(err.message); continue; }
      say("not saved yet: the server is out of reach; trying again");
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
  page.sending = false;
  if (page.gone) return;
  renderSide();
  loadHistory();
  if (!page.item) refresh();
}

// The queue as the server has it after an answer: what another tab or person answered meanwhile leaves this one.
function keepOnly(ids) {
  const open = new Set(ids);
  page.queue = page.queue.filter((item) => open.has(item.id));
  const known = new Set(page.queue.map((item) => item.id));
  if (page.item && !open.has(page.item.id) && !page.pending.some((a) => a.item === page.item.id)) {
    say("that sentence was answered elsewhere meanwhile: here is the next");
    next();
  }
  if (ids.some((id) => !known.has(id) && !(page.item && page.item.id === id))) refresh();  // a new batch
}

// An answer refused because the sentence was answered meanwhile: the person keeps that answer or replaces it.
function conflict(mine, err) {
  const c = { mine, theirs: err.data.answer, item: err.data.item, version: err.data.version, message: err.message };
  remember("conflicts", c, conflictId);
  page.conflicts.push(c);
  renderConflicts();
}

// An answer in words: each entity's words and type, or what it was.
function spansText(item, answer) {
  if (!answer) return "nothing";
  if (answer.skip) return "skipped";
  const words = (answer.spans || []).map((s) => `${item.words.slice(s.start, s.end).map(([a, b]) => item.text.slice(a, b)).join(" ")} ${s.label}`);
  return words.join("; ") || "no entity";
}

function renderConflicts() {
  const box = document.getElementById("conflicts");
  box.replaceChildren();
  page.conflicts.forEach((c) => {
    const entry = el("div", "conflict");
    const text = c.item ? c.item.text : (page.texts.get(c.mine.item) || c.mine.item);
    entry.append(el("p", "", `«${text.slice(0, 80)}»: ${c.message}.`));
    if (c.item) {
      const who = c.theirs.annotator || "the other tab";
      entry.append(el("p", "theirs", `${who}: ${spansText(c.item, c.theirs)}`), el("p", "mine", `yours: ${spansText(c.item, c.mine)}`));
    }
    const keep = el("button", "keep", "keep that answer");
    const replace = el("button", "replace", "replace it with mine");
    keep.onclick = () => settle(c, false);
    replace.onclick = () => settle(c, true);
    entry.append(keep, replace);
    box.append(entry);
  });
}

function settle(c, replace) {
  page.conflicts = page.conflicts.filter((other) => other !== c);
  forget("conflicts", c.mine.id, conflictId);
  if (replace) send({ ...c.mine, id: newId(), version: c.version, replace: true });
  renderConflicts();
}

function next() {
  page.editing = null;
  page.reviewing = null;
  show(page.queue.shift() || null);
}

// Two people's agreement on the items both answered, and the disagreements left to settle.
function renderAgreement(progress) {
  document.getElementById("agreement").textContent = progress.shared ? `${progress.shared} sentence(s) answered by two people` : "";
  document.getElementById("review-button").hidden = !progress.shared;
}

// Agreement per pair of people: entity F1 and kappa with their 95% intervals, what they rest on, and per type.
function agreementTable(agreement) {
  const box = el("div", "pairs");
  const percent = (v) => (v === null ? "–" : (100 * v).toFixed(1));
  const range = (pair) => (pair ? ` [${percent(pair[0])}, ${percent(pair[1])}]` : "");
  agreement.pairs.forEach((pair) => {
    const head = `${pair.people.join(" and ")}: ${pair.sentences} sentence(s), ${pair.words} words both judged`;
    const kappa = pair.kappa === null ? "–" : `${pair.kappa.toFixed(2)} [${pair.kappa_interval.map((v) => v.toFixed(2)).join(", ")}]`;
    box.append(el("p", "", `${head}; entity F1 ${percent(pair.entity_f1)}${range(pair.entity_f1_interval)}; Cohen's kappa ${kappa}`));
    const table = el("table", "per-type");
    const row = (cells, tag) => { const tr = el("tr"); cells.forEach((c) => tr.append(el(tag, "", String(c)))); table.append(tr); };
    row(["type", pair.people[0], pair.people[1], "both", "F1"], "th");
    Object.entries(pair.per_type).forEach(([type, c]) => row([type, c.first, c.second, c.both, percent(c.f1)], "td"));
    box.append(table);
  });
  return box;
}

async function openReview() {
  const data = await api("api/review");
  const list = document.getElementById("review-list");
  list.replaceChildren(agreementTable(data.agreement));
  if (!data.disagreements.length) list.append(el("p", "", "Nothing to settle: every sentence two people answered agrees."));
  const named = page.state.reviewer;
  data.disagreements.forEach(({ item, answers }) => {
    const entry = el("div", "disagreement");
    entry.append(el("p", "sentence-text", item.text));
    const sides = el("div", "sides");
    const party = answers.some((answer) => answer.annotator === page.annotator);
    const settles = !party && (!named || named === page.annotator);
    answers.forEach((answer) => {
      const side = el("div", "side");
      side.append(el("p", "", `${answer.annotator || "?"}: ${spansText(item, answer)}`));
      sides.append(side);
      if (!settles) return;
      const choose = el("button", "choose", `take ${answer.annotator || "this"}'s`);
      choose.onclick = async () => {
        await api("api/adjudicate", { id: newId(), item: item.id, choose: answer.id, ...who() });
        entry.remove();
        refresh();
      };
      side.append(choose);
    });
    entry.append(sides);
    if (settles) {
      const third = el("button", "edit-third", "edit an answer of my own");
      third.onclick = () => { document.getElementById("review").close(); review(item, answers[0]); };
      entry.append(third);
    } else {
      entry.append(el("p", "who-settles", party ? "you answered it: someone who did not settles it" : `${named} settles it`));
    }
    list.append(entry);
  });
  const dialog = document.getElementById("review");
  if (!dialog.open) dialog.showModal();
}

// The tab's last answers, newest first: opening one shows it as answered; the next answer replaces it.
async function loadHistory(more) {
  if (page.gone || !(page.annotator || (page.state && page.state.annotator))) return;  // nobody's yet
  const offset = more ? page.historyShown : 0;
  const data = await api(`api/history?${whoQuery()}offset=${offset}`);
  const list = document.getElementById("history");
  if (!more) list.replaceChildren();
  page.historyShown = offset + data.history.length;
  document.getElementById("more-history").hidden = page.historyShown >= data.total;
  data.history.forEach((entry) => {
    const types = (entry.answer.spans || []).map((s) => s.label).join(", ");
    const what = entry.answer.skip ? "skipped" : types || "no entity";
    const button = el("button", "earlier", `${entry.item.text.slice(0, 40)} · ${what}`);
    button.onclick = () => edit(entry);
    const row = el("li");
    row.append(button);
    list.append(row);
  });
}

// The reviewer's own answer to a disagreement: the sentence opens with the first answer to correct, and
// accepting settles it with what the reviewer made.
function review(item, start) {
  if (page.item && !page.editing && !page.reviewing) page.queue.unshift(page.item);
  page.reviewing = item.id;
  page.restore = start;
  show({ ...item, version: 0 });
  say("your own answer to a disagreement: correct it and accept to settle the sentence");
}

function edit(entry) {
  if (page.item && !page.editing) page.queue.unshift(page.item);  // back to it after the edit
  page.editing = entry;
  page.restore = entry.answer;
  show({ ...entry.item, version: entry.version });
  say("an earlier answer: change it and accept (or skip) to replace it");
}

function who() { return page.annotator ? { annotator: page.annotator } : {}; }
function whoQuery() { return page.annotator ? `annotator=${encodeURIComponent(page.annotator)}&` : ""; }
function away() { return Date.now() - page.lastKey > IDLE_MS ? "idle=1&" : ""; }

function request(item, body) {
  return { id: newId(), tab: TAB, item: item.id, version: item.version, ...who(), ...body };
}

// The person's name (kept in this browser): on every answer, and what decides which shared items they still owe.
function setAnnotator(name) {
  page.annotator = name.trim().slice(0, 64);
  sessionStorage.setItem("xling-annotator", page.annotator);
  localStorage.setItem("xling-annotator", page.annotator);
  // answers this tab made before any name was asked for are this person's: they carry it from now
  page.pending.forEach((answer) => { if (!answer.annotator && page.annotator) answer.annotator = page.annotator; });
  page.queue = [];
  say("");  // the prompt for a name has done its work
  show(null);
  refresh();
  loadHistory();
  flush();
}

function askName() {
  const name = document.getElementById("annotator");
  say("several people may answer this session: give your name to start");
  name.focus();
}

function answer(spans, judged) {
  const item = page.item;
  const labels = { spans: spans.map(({ start, end, label }) => ({ start, end, label })), judged };
  page.takenBack.delete(item.id);
  say("");  // a hint about this sentence (taken back, an edit, a settlement) is done with
  if (page.reviewing === item.id) {
    api("api/adjudicate", { id: newId(), item: item.id, ...labels, ...who() }).then(() => refresh(), (err) => say(err.message));
  } else send(request(item, labels));
  next();
}

function focusRange(extra) {
  const f = page.item.focus;
  return [Math.min(f.start, extra[0]), Math.max(f.end, extra[1])];
}

function label(type) {
  const [start, end] = selection();
  if (page.state.mode === "spans") {
    const range = page.anchor === null ? [page.item.focus.start, page.item.focus.end] : [start, end];
    answer([{ start: range[0], end: range[1], label: type }], focusRange(range));
    return;
  }
  page.spans = page.spans.filter((s) => s.end <= start || s.start >= end);
  page.spans.push({ start, end, label: type });
  page.spans.sort((a, b) => a.start - b.start);
  page.anchor = null;
  render();
}

function accept() {
  if (page.state.mode !== "spans") { answer(page.spans, null); return; }
  const f = page.item.focus;
  const type = (page.spans[0] && page.spans[0].label) || f.label;  // an edited answer's type, else the model's
  if (!type) { ask(missedQuestion(page.item)); return; }
  const [start, end] = selection();  // the span's words as Shift+←/→ or a drag left them
  answer([{ start, end, label: type }], focusRange([start, end]));
}

function reject() {
  if (page.state.mode === "spans") { answer([], [page.item.focus.start, page.item.focus.end]); return; }
  page.spans = page.spans.filter((s) => !(s.start <= page.cursor && page.cursor < s.end));
  render();
}

async function undo() {
  while (page.pending.length || page.sending) await new Promise((resolve) => setTimeout(resolve, 50));
  const data = await api("api/undo", { id: newId(), tab: TAB, ...who() });
  if (!data.undone) { say("nothing of yours to undo"); return; }
  // The sentence comes back with the answer now in force, to correct (an earlier answer of the same person,
  // restored), or else with what was taken back: never with the model's suggestion in place of a correction.
  if (page.item && !page.editing && page.item.id !== data.item.id) page.queue.unshift(page.item);
  page.queue = page.queue.filter((item) => item.id !== data.item.id);
  page.editing = data.restored ? { answer: data.restored, item: data.item, version: data.version } : null;
  page.restore = data.restored || data.undone;
  page.takenBack.set(data.item.id, page.restore);  // a further undo sends this one back to the queue: kept
  show({ ...data.item, version: data.version });
  say(data.restored ? "taken back: the answer before it is in force again, shown here" : "taken back: answer it again");
  renderSide();
  loadHistory();
}

function skip() { page.takenBack.delete(page.item.id); say(""); send(request(page.item, { skip: true })); next(); }

function move(step, extend) {
  if (page.state.mode === "spans") { moveEdge(step, extend); return; }
  if (extend && page.anchor === null) page.anchor = page.cursor;
  if (!extend) page.anchor = null;
  page.cursor = Math.max(0, Math.min(page.item.words.length - 1, page.cursor + step));
  render();
}

// Spans mode: each arrow moves one edge of the span its own way: with Shift the outer edge on its side (the span
// grows), without it the edge on the other side (the span shrinks); never below one word.
function moveEdge(step, extend) {
  let [start, end] = selection();
  const last = page.item.words.length;
  if (extend && step > 0) end = Math.min(last, end + 1);
  else if (extend) start = Math.max(0, start - 1);
  else if (end - start > 1 && step > 0) start += 1;
  else if (end - start > 1) end -= 1;
  page.anchor = start;
  page.cursor = end - 1;
  render();
}

function toggle(id) {
  const dialog = document.getElementById(id);
  if (dialog.open) dialog.close(); else dialog.showModal();
}

function onKey(event) {
  page.lastKey = Date.now();
  if (event.ctrlKey || event.metaKey || event.altKey) return;  // the browser's and the system's shortcuts
  if (event.target.closest && event.target.closest("input, textarea")) return;  // typing a name
  if (event.key === "?" || event.key === "h") { toggle(event.key === "?" ? "keys" : "guidelines"); event.preventDefault(); return; }
  if (document.querySelector("dialog[open]")) return;  // Escape closes it
  if (!page.item && event.key !== "u") return;
  const started = performance.now();
  const type = /^[1-9]$/.test(event.key) ? page.state.types[Number(event.key) - 1] : null;
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") move(event.key === "ArrowRight" ? 1 : -1, event.shiftKey);
  else if (type) label(type);
  else if (event.key === "Enter" || event.key === "a") accept();
  else if (event.key === "x" || event.key === "r" || event.key === "Backspace") reject();
  else if (event.key === "s") skip();
  else if (event.key === "u") { undo(); }
  else return;
  event.preventDefault();
  requestAnimationFrame(() => page.latencies.push(performance.now() - started));
}

function onClick(event) {
  const badge = event.target.closest(".badge");
  if (!badge) return;
  page.spans = page.spans.filter((s) => s.start !== Number(badge.dataset.start));
  render();
}

// Mouse and touch: pressing on a word puts the cursor there, dragging selects whole words up to where the
// pointer is (the browser's own text selection is off), Shift+press extends the selection.
function wordUnder(event) {
  const node = document.elementFromPoint(event.clientX, event.clientY);
  return node && node.closest ? node.closest(".word") : null;
}

function onPointerDown(event) {
  page.lastKey = Date.now();
  const word = event.target.closest(".word");
  if (!word || !page.item || event.target.closest(".badge")) return;
  event.preventDefault();
  const index = Number(word.dataset.index);
  if (!event.shiftKey) page.anchor = index;
  else if (page.anchor === null) page.anchor = page.cursor;
  page.cursor = index;
  page.dragging = true;
  render();
}

function onPointerMove(event) {
  if (!page.dragging) return;
  const word = wordUnder(event);
  if (word && Number(word.dataset.index) !== page.cursor) {
    page.cursor = Number(word.dataset.index);
    render();
  }
}

function onPointerUp() { page.dragging = false; }

const BUTTONS = {
  accept, reject, skip, undo, review: openReview, keys: () => toggle("keys"), guidelines: () => toggle("guidelines"),
  "more-history": () => loadHistory(true), close: () => document.querySelectorAll("dialog[open]").forEach((d) => d.close()),
};

function onButton(event) {
  const button = event.target.closest("button[data-action], button[data-type]");
  if (!button || (!page.item && !["undo", "review", "keys", "guidelines", "more-history", "close"].includes(button.dataset.action))) return;
  if (button.dataset.type) label(button.dataset.type);
  else BUTTONS[button.dataset.action]();
}

// The state from the server; `first` (an item just taken back) is shown before the rest.
async function refresh(first) {
  if (page.gone) return;
  const state = await api(`api/state?${whoQuery()}${away()}`);
  const firstTime = !page.state;
  if (page.state && state.instance !== page.state.instance) loadHistory();  // a restarted server: its view
  page.state = state;
  if (firstTime) {
    localStorage.setItem(`${STORE}:name`, state.session);
    renderElsewhere();
    document.getElementById("session").textContent = `${state.session} (${state.lang}, ${state.mode})`;
    const name = document.getElementById("annotator");
    if (state.annotator) {  // a one-person session: that person's name, fixed
      page.annotator = state.annotator;
      name.readOnly = true;
    }
    name.value = page.annotator;
    name.addEventListener("change", () => setAnnotator(name.value));
    const link = document.getElementById("export");
    if (TOKEN) link.href = `api/gold.conll?token=${encodeURIComponent(TOKEN)}`;
    renderLegend();
    // markdown-it's HTML, with any raw HTML of the file escaped by the server
    api("api/guidelines").then((data) => { document.getElementById("guidelines-text").innerHTML = data.guidelines; });
    loadHistory();
    page.conflicts = stored("conflicts");
    renderConflicts();
    const unsent = stored("unsent").filter((a) => !page.pending.some((p) => p.id === a.id));
    if (unsent.length) { page.pending.push(...unsent); flush(); }
  }
  if (state.needs_name) askName();
  else if (document.getElementById("status").textContent.startsWith("several people may answer")) say("");
  const shown = first ? null : page.item && page.item.id;
  const taken = new Set([shown, ...page.pending.map((answer) => answer.item)]);
  page.queue = state.queue.filter((item) => !taken.has(item.id));
  if (first) page.queue.sort((a, b) => (b.id === first) - (a.id === first));
  if (!shown) next(); else renderSide();
}

document.addEventListener("keydown", onKey);
document.getElementById("sentence").addEventListener("click", onClick);
document.getElementById("sentence").addEventListener("pointerdown", onPointerDown);
document.addEventListener("pointermove", onPointerMove);
document.addEventListener("pointerup", onPointerUp);
document.addEventListener("click", onButton);
setInterval(() => { if (!page.gone && (!page.item || (page.state && page.state.retraining.running))) refresh(); }, 5000);
refresh().catch((err) => say(err.message));
