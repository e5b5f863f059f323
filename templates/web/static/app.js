// dealer's status page: the live parts. Without this script the page still shows every
// figure and every time in UTC; with it, each deadline shows the viewer's own time and a
// live countdown, the page refreshes itself when the store changes, and every revealed
// draw and receipt is recomputed here from the published seeds (docs/FAIRNESS.md).
"use strict";
document.documentElement.classList.add("js");

const pad = (n) => String(n).padStart(2, "0");

// A UTC instant in the viewer's zone: "2027-01-05 09:00 JST" (Intl gives the zone's name).
function localTime(date) {
  const parts = new Intl.DateTimeFormat("en-GB", {
    year: "numeric", month: "2-digit", day: "2-digit", hour: "2-digit", minute: "2-digit",
    hourCycle: "h23", timeZoneName: "short",
  }).formatToParts(date);
  const get = (type) => (parts.find((p) => p.type === type) || {}).value || "";
  return `${get("year")}-${get("month")}-${get("day")} ${get("hour")}:${get("minute")} ${get("timeZoneName")}`;
}

function countdown(ms) {
  if (ms <= 0) return "due now";
  let s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400); s -= d * 86400;
  const h = Math.floor(s / 3600); s -= h * 3600;
  const m = Math.floor(s / 60); s -= m * 60;
  const out = [];
  if (d) out.push(`${d} d`);
  if (d || h) out.push(`${h} h`);
  out.push(`${pad(m)} min`);
  if (!d) out.push(`${pad(s)} s`);
  return "in " + out.join(" ");
}

function showTimes(root) {
  for (const el of root.querySelectorAll("time.when")) {
    if (el.dataset.utc === undefined) el.dataset.utc = el.textContent;
    const at = new Date(el.getAttribute("datetime"));
    el.textContent = localTime(at);
    el.title = el.dataset.utc;
  }
  tick();
}

function tick() {
  const now = Date.now();
  for (const el of document.querySelectorAll(".countdown[data-until]")) {
    el.textContent = "(" + countdown(new Date(el.dataset.until).getTime() - now) + ")";
  }
}

// --- live refresh: poll a change mark, then swap the page's <main> ----------------------
// The mark the page was rendered at (a change made while it loaded is caught at once).
let mark = document.body ? (document.body.dataset.mark || null) : null;
async function poll() {
  try {
    const answer = await fetch("/api/changes", { cache: "no-store" });
    const now = (await answer.json()).mark;
    if (mark !== null && now !== mark) await refresh();
    mark = now;
  } catch (e) { /* the server is away for a moment: try again at the next poll */ }
}

async function refresh() {
  const answer = await fetch(location.href, { cache: "no-store" });
  const html = await answer.text();
  const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("main");
  if (!fresh) return;
  document.getElementById("main").replaceChildren(...fresh.childNodes);
  const live = document.querySelector(".live");
  if (live) live.textContent = "updated " + localTime(new Date());
  showTimes(document);
  checkFairness();
}

// --- fairness: the procedure of docs/FAIRNESS.md, with Web Crypto -----------------------
const enc = new TextEncoder();
const hex = (buf) => Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, "0")).join("");

async function sha256(text) {
  return hex(await crypto.subtle.digest("SHA-256", enc.encode(text)));
}

async function hmac(key, message) {
  const k = await crypto.subtle.importKey("raw", enc.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return hex(await crypto.subtle.sign("HMAC", k, enc.encode(message)));
}

// GH-40: a draw among n from the counter on, with rejection sampling.
async function draw(seed, client, counter, n) {
  const big = BigInt(n);
  const limit = ((1n << 256n) / big) * big;
  for (let c = counter; ; c++) {
    const value = BigInt("0x" + (await hmac(seed, `${client}:${c}`)));
    if (value < limit) return Number(value % big);
  }
}

function mark_(el, ok, words) {
  el.classList.remove("ok", "bad");
  el.classList.add(ok ? "ok" : "bad");
  el.textContent = ok ? `✓ ${words}` : `✗ ${words}: MISMATCH`;
  el.dataset.result = ok ? "ok" : "bad";
}

async function checkFairness() {
  const node = document.getElementById("fairness-data");
  if (!node || !(window.crypto && crypto.subtle)) return;
  const f = JSON.parse(node.textContent);
  const cells = (kind) => document.querySelectorAll(`.check[data-check="${kind}"]`);
  let good = 0, bad = 0;
  const count = (ok) => { if (ok) good++; else bad++; return ok; };
  if (f.seed) {
    const seed = f.seed.server_seed;
    for (const el of cells("seed")) mark_(el, count((await sha256(seed)) === f.seed.commitment), "commitment");
    const clients = [];
    for (let k = 0; k <= f.seed.client_seeds.length; k++) clients.push(await sha256(f.seed.client_seeds.slice(0, k).join("\n")));
    for (const el of cells("draw")) {
      const d = f.draws[Number(el.dataset.index)];
      const result = await draw(seed, d.client, d.counter, d.n);
      const ok = clients.includes(d.client) && result === d.result;
      mark_(el, count(ok), ok ? "checked" : `the seed gives ${result}`);
    }
  }
  const salted = /^(.*), (preparation|round (\d+)), submission (\d+), (prepare|bet) /;
  for (const el of cells("receipt")) {
    const r = f.receipts[Number(el.dataset.index)];
    let ok = (await sha256(r.salt + r.text)) === r.receipt;
    const m = r.text.startsWith(f.game_id + ", ") && salted.exec(r.text.slice(f.game_id.length + 2));
    if (ok && m && f.seed && f.seed.epoch === 0) {  // the salt itself, from the revealed seed
      const phase = m[3] ? `round-${m[3]}` : "preparation";
      ok = (await hmac(f.seed.server_seed, `secret:${m[1]}:${phase}:${m[5]}:${m[4]}`)) === r.salt;
    }
    mark_(el, count(ok), "receipt");
  }
  for (const el of cells("commitment")) {
    const c = f.commitments[Number(el.dataset.index)];
    mark_(el, count((await sha256(c.salt + c.colour)) === c.commitment), "colour commitment");
  }
  const verdict = document.querySelector(".verdict");
  if (verdict) {
    verdict.classList.remove("ok", "bad");
    if (good + bad === 0) verdict.textContent = "Nothing revealed to check yet.";
    else {
      verdict.classList.add(bad ? "bad" : "ok");
      verdict.textContent = bad ? `${bad} of ${good + bad} checks FAILED in your browser.`
                                : `All ${good} checks passed in your browser.`;
    }
    verdict.dataset.done = "1";
  }
}

document.addEventListener("DOMContentLoaded", () => {
  if (mark === null) mark = document.body.dataset.mark || null;
  showTimes(document);
  setInterval(tick, 1000);
  checkFairness();
  const every = Number(document.body.dataset.poll || 5) * 1000;
  poll();
  setInterval(poll, every);
});
