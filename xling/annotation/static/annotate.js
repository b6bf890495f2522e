// The labelling page of `xling annotate`: keyboard first, every answer posted at once (in order, retried until
// the server has it). Corpus text only ever goes into the page as text nodes, never as markup.
"use strict";

const TOKEN = new URLSearchParams(location.search).get("token");
// Every change the page asks for carries the token the server wrote into it: no other site can read it.
const PAGE_TOKEN = document.querySelector('meta[name="xling-page-token"]').content;
const COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf", "#7f7f7f"];
const page = {
  state: null, queue: [], item: null, spans: [], cursor: 0, anchor: null,
  pending: [], sending: false, latencies: [],
};
window.xlingPage = page; // read by the browser test and the latency bench

function api(path, body) {
  const headers = { "Content-Type": "application/json", "X-Xling-Page-Token": PAGE_TOKEN };
  if (TOKEN) headers["X-Xling-Token"] = TOKEN;
  const init = body === undefined ? { headers } : { method: "POST", headers, body: JSON.stringify(body), keepalive: true };
  return fetch(path, init).then(async (response) => {
    const data = await response.json();
    if (!response.ok) throw Object.assign(new Error(data.error || response.statusText), { status: response.status });
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
  if (!item) { page.spans = []; render(); return; }
  if (page.state.mode === "spans") {
    const f = item.focus;
    page.spans = f.label ? [{ start: f.start, end: f.end, label: f.label, confidence: f.confidence }] : [];
    page.cursor = f.start;
    page.anchor = f.end - 1;
  } else {
    page.spans = suggestions(item);
    page.cursor = 0;
  }
  render();
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
    box.append(el("p", "", page.state && page.state.retraining.running ? "Retraining: the next batch comes when it is done." : "Nothing left to label in this session."));
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
  document.getElementById("progress").textContent =
    `${p.answered} done, ${page.queue.length + (page.item ? 1 : 0)} to go · ${p.words} words judged${types ? " · " + types : ""}${unsaved}`;
  const r = state.retraining;
  const last = r.rounds[r.rounds.length - 1];
  document.getElementById("retraining").textContent = r.running ? `training ${r.adapter}…`
    : r.failed ? `the last round failed: ${r.failed}`
    : last ? `${r.rounds.length} round(s); dev F1 ${(100 * last.f1).toFixed(1)} after ${last.sentences} sentences`
    : r.every ? `after every ${r.every} answers` : "off";
  drawCurve(r.rounds);
}

function drawCurve(rounds) {
  const svg = document.getElementById("curve");
  svg.replaceChildren();
  const points = rounds.filter((r) => r.f1 !== null);
  if (!points.length) return;
  const ns = "http://www.w3.org/2000/svg";
  const most = Math.max(...points.map((r) => r.sentences));
  const xy = points.map((r) => [10 + 240 * (r.sentences / most), 110 - 100 * r.f1]);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", xy.map((p) => p.join(",")).join(" "));
  line.setAttribute("fill", "none");
  line.setAttribute("stroke", "#1f77b4");
  svg.append(line);
  xy.forEach(([x, y], i) => {
    const dot = document.createElementNS(ns, "circle");
    Object.entries({ cx: x, cy: y, r: 3, fill: "#1f77b4" }).forEach(([k, v]) => dot.setAttribute(k, v));
    const title = document.createElementNS(ns, "title");
    title.textContent = `${points[i].sentences} sentences: F1 ${(100 * points[i].f1).toFixed(1)}`;
    dot.append(title);
    svg.append(dot);
  });
}

function renderLegend() {
  const legend = document.getElementById("legend");
  legend.replaceChildren();
  page.state.types.slice(0, 9).forEach((type, i) => {
    const entry = el("span", "type");
    entry.append(el("span", "key", String(i + 1)), type);
    entry.style.color = colour(type);
    legend.append(entry);
  });
  const help = page.state.mode === "spans"
    ? [["Enter", "accept the span"], ["r", "not an entity"], ["1-9", "its type (after Shift+←/→ to fix its words)"], ["s", "skip"], ["u", "undo"]]
    : [["←/→", "move"], ["Shift+←/→", "select words"], ["1-9", "label the selection"], ["x", "remove the entity here"], ["Enter", "accept the sentence"], ["s", "skip"], ["u", "undo"]];
  const box = document.getElementById("help");
  box.replaceChildren();
  help.forEach(([key, what]) => box.append(el("span", "key", key), what, " "));
}

// Answers leave in the order given; one that fails for the network is tried again, one refused is reported.
function send(answer) {
  page.pending.push(answer);
  flush();
}

async function flush() {
  if (page.sending) return;
  page.sending = true;
  while (page.pending.length) {
    try {
      const data = await api("api/answer", page.pending[0]);
      page.pending.shift();
      page.state.progress = data.progress;
      page.state.retraining = data.retraining;
      say("");
    } catch (err) {
      if (err.status && err.status < 500) { page.pending.shift(); say(err.message); continue; }
      say("not saved yet: the server is out of reach; trying again");
      await new Promise((resolve) => setTimeout(resolve, 2000));
    }
  }
  page.sending = false;
  renderSide();
  if (!page.item) refresh();
}

function next() { show(page.queue.shift() || null); }

function answer(spans, judged) {
  const item = page.item;
  send({ item: item.id, spans: spans.map(({ start, end, label }) => ({ start, end, label })), judged });
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
  if (!f.label) { say("this may be an entity the model missed: press its type (1-9), or r if it is none"); return; }
  answer(page.spans, [f.start, f.end]);
}

function reject() {
  if (page.state.mode === "spans") { answer([], [page.item.focus.start, page.item.focus.end]); return; }
  page.spans = page.spans.filter((s) => !(s.start <= page.cursor && page.cursor < s.end));
  render();
}

async function undo() {
  while (page.pending.length || page.sending) await new Promise((resolve) => setTimeout(resolve, 50));
  const data = await api("api/undo", {});
  if (!data.undone) { say("nothing to undo"); return; }
  await refresh(data.undone);
}

function move(step, extend) {
  if (extend && page.anchor === null) page.anchor = page.cursor;
  if (!extend) page.anchor = null;
  page.cursor = Math.max(0, Math.min(page.item.words.length - 1, page.cursor + step));
  render();
}

function onKey(event) {
  if (!page.item && !["u", "z"].includes(event.key)) return;
  const started = performance.now();
  const type = /^[1-9]$/.test(event.key) ? page.state.types[Number(event.key) - 1] : null;
  if (event.key === "ArrowRight" || event.key === "ArrowLeft") move(event.key === "ArrowRight" ? 1 : -1, event.shiftKey);
  else if (type) label(type);
  else if (event.key === "Enter" || event.key === "a") accept();
  else if (event.key === "x" || event.key === "r" || event.key === "Backspace") reject();
  else if (event.key === "s") { send({ item: page.item.id, skip: true }); next(); }
  else if (event.key === "u" || (event.key === "z" && (event.ctrlKey || event.metaKey))) { undo(); }
  else return;
  event.preventDefault();
  requestAnimationFrame(() => page.latencies.push(performance.now() - started));
}

function onClick(event) {
  const badge = event.target.closest(".badge");
  if (badge) {
    page.spans = page.spans.filter((s) => s.start !== Number(badge.dataset.start));
    render();
    return;
  }
  const word = event.target.closest(".word");
  if (!word) return;
  if (event.shiftKey && page.anchor === null) page.anchor = page.cursor;
  if (!event.shiftKey) page.anchor = null;
  page.cursor = Number(word.dataset.index);
  render();
}

// The state from the server; `first` (an item just taken back) is shown before the rest.
async function refresh(first) {
  const state = await api("api/state");
  const firstTime = !page.state;
  page.state = state;
  if (firstTime) {
    document.getElementById("session").textContent = `${state.session} (${state.lang}, ${state.mode})`;
    const link = document.getElementById("export");
    if (TOKEN) link.href = `api/gold.conll?token=${encodeURIComponent(TOKEN)}`;
    renderLegend();
  }
  const shown = first ? null : page.item && page.item.id;
  const taken = new Set([shown, ...page.pending.map((answer) => answer.item)]);
  page.queue = state.queue.filter((item) => !taken.has(item.id));
  if (first) page.queue.sort((a, b) => (b.id === first) - (a.id === first));
  if (!shown) next(); else renderSide();
}

document.addEventListener("keydown", onKey);
document.getElementById("sentence").addEventListener("click", onClick);
setInterval(() => { if (!page.item || (page.state && page.state.retraining.running)) refresh(); }, 5000);
refresh().catch((err) => say(err.message));
