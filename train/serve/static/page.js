// The drawing page: strokes are kept in CSS pixels (y down, as InkML) and sent as JSON; the server
// draws them exactly as the training shards were drawn. No library, nothing fetched from elsewhere.
"use strict";

const $ = (id) => document.getElementById(id);
const pad = $("pad");
const ctx = pad.getContext("2d");
const strokes = [];            // [[[x, y], ...], ...]
let pointerId = null;          // the pointer drawing now (one at a time: a palm or second finger is ignored)
let timer = null;
let seq = 0;                   // answers to older requests are dropped
let steps = [];
let playing = null;
let hasSteps = true;

function setState(state, text, isError) {
  document.body.dataset.state = state;
  $("status").textContent = text;
  $("status").classList.toggle("error", !!isError);
}

// -- drawing -----------------------------------------------------------------------------------
function resize() {
  const r = pad.getBoundingClientRect();
  const d = window.devicePixelRatio || 1;
  pad.width = Math.round(r.width * d);
  pad.height = Math.round(r.height * d);
  redraw();
}

function style() {
  const d = window.devicePixelRatio || 1;
  ctx.setTransform(d, 0, 0, d, 0, 0);
  ctx.lineWidth = 3;
  ctx.lineCap = "round";
  ctx.lineJoin = "round";
  ctx.strokeStyle = ctx.fillStyle = "#111";
}

function drawStroke(s) {
  if (s.length === 1) {
    ctx.beginPath();
    ctx.arc(s[0][0], s[0][1], 1.5, 0, 2 * Math.PI);
    ctx.fill();
    return;
  }
  ctx.beginPath();
  ctx.moveTo(s[0][0], s[0][1]);
  for (let i = 1; i < s.length; i++) ctx.lineTo(s[i][0], s[i][1]);
  ctx.stroke();
}

function redraw() {
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.clearRect(0, 0, pad.width, pad.height);
  style();
  strokes.forEach(drawStroke);
}

function at(e) {
  const r = pad.getBoundingClientRect();
  return [Math.round((e.clientX - r.left) * 10) / 10, Math.round((e.clientY - r.top) * 10) / 10];
}

pad.addEventListener("pointerdown", (e) => {
  if (pointerId !== null || (e.pointerType === "mouse" && e.button !== 0)) return;
  e.preventDefault();
  pad.setPointerCapture(e.pointerId);
  pointerId = e.pointerId;
  strokes.push([at(e)]);
  clearTimeout(timer);
  style();
  drawStroke(strokes[strokes.length - 1]);
});

pad.addEventListener("pointermove", (e) => {
  if (e.pointerId !== pointerId) return;
  e.preventDefault();
  const s = strokes[strokes.length - 1];
  const events = (e.getCoalescedEvents && e.getCoalescedEvents().length) ? e.getCoalescedEvents() : [e];
  style();
  ctx.beginPath();
  ctx.moveTo(s[s.length - 1][0], s[s.length - 1][1]);
  for (const ev of events) {
    const p = at(ev);
    s.push(p);
    ctx.lineTo(p[0], p[1]);
  }
  ctx.stroke();
});

function penUp(e) {
  if (e.pointerId !== pointerId) return;
  pointerId = null;
  schedule();
}
pad.addEventListener("pointerup", penUp);
pad.addEventListener("pointercancel", penUp);
pad.addEventListener("lostpointercapture", penUp);

function schedule() {
  clearTimeout(timer);
  if ($("auto").checked && strokes.length) timer = setTimeout(recognizeStrokes, 400);
}

function undo() {
  if (pointerId !== null) return;
  strokes.pop();
  redraw();
  if (strokes.length) schedule(); else clearResult();
}

function clearAll() {
  strokes.length = 0;
  pointerId = null;
  redraw();
  clearResult();
}

$("undo").addEventListener("click", undo);
$("clear").addEventListener("click", clearAll);
$("go").addEventListener("click", recognizeStrokes);
document.addEventListener("keydown", (e) => {
  if ((e.ctrlKey || e.metaKey) && e.key === "z" && e.target.tagName !== "INPUT") { e.preventDefault(); undo(); }
  if (e.key === "Escape") clearAll();
});
window.addEventListener("resize", resize);

// -- talking to the server ---------------------------------------------------------------------
function T() {
  const t = parseInt($("T").value, 10);
  return Number.isFinite(t) ? t : 10;
}

function recognizeStrokes() {
  clearTimeout(timer);
  if (!strokes.length) { setState("idle", "Write something above."); return; }
  post(JSON.stringify({ strokes: strokes, T: T() }), "application/json", "", String(strokes.length));
}

function recognizeImage(file) {
  if (!file) return;
  strokes.length = 0;  // an image replaces the drawing and whatever was read before
  redraw();
  clearShown();
  const printed = !$("printed-box").hidden && $("printed").checked;
  post(file, file.type || "application/octet-stream", "?T=" + T() + (printed ? "&model=printed" : ""), "image");
}

// source: what was sent ("3" strokes, or "image"); the page notes it on <body data-read> with the
// answer, so a test can wait for the answer to its last stroke rather than to an earlier one
async function post(body, type, query, source) {
  const id = ++seq;
  setState("busy", "reading…");
  let answer, ok;
  try {
    const r = await fetch("/api/recognize" + query, { method: "POST", headers: { "Content-Type": type }, body: body });
    ok = r.ok;
    answer = await r.json().catch(() => ({ error: "the server answered " + r.status + " without JSON" }));
  } catch (err) {
    ok = false;
    answer = { error: "the server cannot be reached (" + err.message + ")" };
  }
  if (id !== seq) return;
  document.body.dataset.read = source;
  if (!ok) { clearShown(); setState("error", answer.error || "failed", true); return; }
  show(answer);
}

function clearResult() {
  seq++;
  clearShown();
  setState("idle", "Write something above.");
}

// the previous answer's LaTeX, picture, image and steps: never left beside an error or a new upload
function clearShown() {
  stop();
  $("latex").textContent = "";
  $("meta").textContent = "";
  $("formula").replaceChildren();
  $("seen").removeAttribute("src");
  $("steps").replaceChildren();
  $("step-latex").textContent = "";
  $("step-label").textContent = "";
  $("copy").disabled = $("play").disabled = $("step").disabled = true;
  steps = [];
}

function show(res) {
  $("latex").textContent = res.latex;
  $("copy").disabled = !res.latex;
  const conf = res.confidence === null ? "" : "confidence " + Math.round(100 * res.confidence) + "%, ";
  $("meta").textContent = conf + (res.T ? "T=" + res.T + ", " : "") + res.ms + " ms on the server" +
    (res.repaired ? ", repaired to parse" : "");
  $("seen").src = res.image;
  showSteps(res.steps, res.T !== null && res.T !== undefined);  // the printed model may have no steps
  renderFormula(res.latex);
  setState("done", res.latex ? "Recognized." : "Nothing recognized.");
}

async function renderFormula(latex) {
  const box = $("formula");
  box.replaceChildren();
  if (!latex) return;
  const id = seq;
  try {
    const r = await fetch("/api/render?latex=" + encodeURIComponent(latex));
    if (id !== seq || !r.ok) return;
    const doc = new DOMParser().parseFromString(await r.text(), "image/svg+xml");
    if (doc.documentElement.nodeName === "svg") box.replaceChildren(document.importNode(doc.documentElement, true));
  } catch (err) { /* the LaTeX stays readable above */ }
}

// -- refinement --------------------------------------------------------------------------------
function shade(c) {  // as train/plots.py: white when sure, through yellow, to red when unsure
  const x = Math.max(0, Math.min(1, c));
  return "rgb(255," + Math.round(140 + 115 * x) + "," + Math.round(255 * x * x) + ")";
}

function showSteps(list, stepped = hasSteps) {
  stop();
  steps = list;
  const box = $("steps");
  box.replaceChildren();
  list.forEach((st, k) => {
    const row = document.createElement("div");
    row.className = "step";
    const n = document.createElement("span");
    n.className = "n";
    n.textContent = stepped ? "step " + (k + 1) : "final";
    row.append(n);
    st.tokens.forEach((tok, j) => {
      const cell = document.createElement("span");
      cell.className = "tok";
      cell.textContent = tok;
      const c = st.confidence[j];
      if (c !== null && c !== undefined) {
        cell.style.background = shade(c);
        cell.title = tok + "  p = " + c.toFixed(2);
      }
      row.append(cell);
    });
    box.append(row);
  });
  const slider = $("step");
  slider.max = String(Math.max(1, list.length));
  slider.disabled = $("play").disabled = list.length < 2;
  select(list.length);
}

function select(k) {
  $("step").value = String(k);
  $("steps").querySelectorAll(".step").forEach((row, i) => {
    row.classList.toggle("current", i === k - 1);
    row.classList.toggle("later", i > k - 1);
  });
  const st = steps[k - 1];
  $("step-latex").textContent = st ? st.latex : "";
  $("step-label").textContent = steps.length ? "step " + k + " of " + steps.length : "";
}

function stop() {
  clearInterval(playing);
  playing = null;
  $("play").textContent = "Replay";
}

$("step").addEventListener("input", () => { stop(); select(parseInt($("step").value, 10)); });
$("play").addEventListener("click", () => {
  if (playing) { stop(); return; }
  let k = 1;
  select(k);
  $("play").textContent = "Stop";
  playing = setInterval(() => {
    if (++k > steps.length) { stop(); return; }
    select(k);
  }, 450);
});

// -- copy --------------------------------------------------------------------------------------
$("copy").addEventListener("click", async () => {
  const text = $("latex").textContent;
  try {
    await navigator.clipboard.writeText(text);
  } catch (err) {  // no clipboard API (an insecure origin): select the text for Ctrl+C
    const range = document.createRange();
    range.selectNodeContents($("latex"));
    getSelection().removeAllRanges();
    getSelection().addRange(range);
    document.execCommand("copy");
  }
  $("copy").textContent = "Copied";
  setTimeout(() => { $("copy").textContent = "Copy LaTeX"; }, 1200);
});

// -- images: choose, drop, paste ---------------------------------------------------------------
const drop = $("drop");
$("file").addEventListener("change", (e) => { recognizeImage(e.target.files[0]); e.target.value = ""; });
drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
drop.addEventListener("dragleave", () => drop.classList.remove("over"));
drop.addEventListener("drop", (e) => {
  e.preventDefault();
  drop.classList.remove("over");
  recognizeImage(e.dataTransfer.files[0]);
});
document.addEventListener("paste", (e) => {
  for (const item of (e.clipboardData ? e.clipboardData.items : [])) {
    if (item.kind === "file" && item.type.startsWith("image/")) { e.preventDefault(); recognizeImage(item.getAsFile()); return; }
  }
});

// -- start ---------------------------------------------------------------------------------------
$("seen").addEventListener("load", () => {  // small canvases (64 px) are shown at 2x or more, pixels kept
  const img = $("seen");
  img.style.width = img.naturalWidth * Math.max(1, Math.floor(128 / img.naturalHeight)) + "px";
});

async function start() {
  resize();
  try {
    const info = await (await fetch("/api/info")).json();
    hasSteps = info.steps;
    $("T").value = info.T;
    $("T").max = info.limits.T[1];
    $("t-box").hidden = !info.steps;
    $("model").textContent = info.title + (info.steps ? " (masked diffusion)" : "") + ", canvas " +
      info.image_size[0] + "×" + info.image_size[1] + ", trained " + info.checkpoint_step + " steps";
    if (info.printed) {
      $("printed-box").hidden = false;
      $("printed-box").title = "read the image with the printed-formula model (" + info.printed.title + ", canvas " +
        info.printed.image_size[0] + "×" + info.printed.image_size[1] + ")";
    }
    if (!info.steps) $("steps-hint").textContent = info.title + " decodes left to right: one final step, no per-token confidence.";
  } catch (err) {
    $("model").textContent = "the server cannot be reached";
  }
  document.body.dataset.ready = "1";
}
start();
