// Shared by every page: the API call with the bearer token, the header, small formatters
// and SVG helpers. Vanilla JS, no build step: the service serves these files as they are.
"use strict";

const TOKEN_KEY = "faultgraph.token";
const SVG_NS = "http://www.w3.org/2000/svg";
const CATEGORY_COLOURS = {
  gpu: "#d9480f", host: "#9c36b5", network: "#1971c2", software: "#2b8a3e",
  maintenance: "#868e96", unknown: "#495057",
};

class ApiError extends Error {
  constructor(status, message) { super(message); this.status = status; }
}

function token() { return localStorage.getItem(TOKEN_KEY) || ""; }

// GET/PATCH a JSON endpoint; a 401/403 shows the token form, a 404 is an ApiError the page
// turns into "not available" (an endpoint this server does not have yet, or no such thing).
async function api(path, options = {}) {
  const headers = { Accept: "application/json", ...(options.body ? { "Content-Type": "application/json" } : {}) };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const response = await fetch(path, { ...options, headers });
  if (response.status === 401 || response.status === 403) {
    showTokenForm(response.status === 401 ? "This server needs a token." : "Your token's role may not do that.");
  }
  if (!response.ok) {
    let detail = response.statusText;
    try { detail = (await response.json()).detail || detail; } catch (_) { /* not JSON */ }
    throw new ApiError(response.status, `${response.status}: ${detail}`);
  }
  return response.json();
}

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined) node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child !== null && child !== undefined) node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function title(text) { return svg("title", {}, text); }

function fmtTime(iso) {
  if (!iso) return "—";
  return iso.replace("T", " ").replace(/\.\d+Z$/, "Z").replace(/Z$/, " UTC");
}

function fmtShortTime(ms) {
  return new Date(ms).toISOString().slice(11, 19);
}

// What on-call should do: kind `none` is no action, whatever component it names (planned
// maintenance names its host).
function actionText(action) {
  return action.kind && action.kind !== "none" ? `${action.kind} ${action.target || ""}`.trim() : "no action";
}

function fmtNumber(value, digits = 1) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  return Number(value).toLocaleString("en-US", { maximumFractionDigits: digits });
}

// A rate estimated from counts, to the figures it carries (the CLI's `_figures` writes the same).
function fmtFigures(value, figures = 3) {
  if (value === null || value === undefined || Number.isNaN(value)) return "—";
  return Number(value).toLocaleString("en-US", { minimumSignificantDigits: figures, maximumSignificantDigits: figures });
}

function fmtDuration(ms) {
  if (ms === null || ms === undefined) return "—";
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  return `${(s / 3600).toFixed(1)} h`;
}

function badge(status) { return el("span", { class: `badge ${status}`, text: status }); }

function categoryChip(category) {
  return el("span", { class: "chip", style: `background:${CATEGORY_COLOURS[category] || "#495057"}`, text: category || "unknown" });
}

function notAvailable(container, what, error) {
  container.replaceChildren(el("p", { class: "unavailable" },
    `${what}: not available`, error ? el("span", { class: "why", text: ` (${error.message})` }) : null));
}

function showTokenForm(reason) {
  const box = document.getElementById("token-box");
  if (!box) return;
  box.hidden = false;
  document.getElementById("token-reason").textContent = reason || "";
  document.getElementById("token-input").value = token();
}

// The header every page shares: navigation and the token control.
function header(active) {
  const nav = el("nav", {},
    el("a", { href: "/ui/", class: active === "incidents" ? "active" : null, text: "Incidents" }),
    el("a", { href: "/ui/reliability.html", class: active === "reliability" ? "active" : null, text: "Reliability" }),
    el("a", { href: "/ui/diagnose.html", class: active === "diagnose" ? "active" : null, text: "Diagnose" }),
    el("a", { href: "/ui/fleet.html", class: active === "fleet" ? "active" : null, text: "Fleet" }),
    el("a", { href: "/docs", text: "API" }));
  const tokenButton = el("button", { class: "link", onclick: () => showTokenForm(""), id: "token-button" },
    token() ? "Token ✓" : "Token");
  const input = el("input", { id: "token-input", type: "password", autocomplete: "off", placeholder: "bearer token", size: "40" });
  const form = el("form", {
    id: "token-box", hidden: true, onsubmit: (event) => {
      event.preventDefault();
      const value = input.value.trim();
      if (value) localStorage.setItem(TOKEN_KEY, value); else localStorage.removeItem(TOKEN_KEY);
      location.reload();
    },
  }, el("span", { id: "token-reason" }), " ", input, " ", el("button", { type: "submit", text: "Save" }),
    " ", el("button", { type: "button", onclick: () => { localStorage.removeItem(TOKEN_KEY); location.reload(); }, text: "Forget" }));
  document.body.prepend(el("header", {}, el("a", { href: "/ui/", class: "brand", text: "faultgraph" }), nav, tokenButton), form);
}

function scaleLinear(d0, d1, r0, r1) {
  const span = d1 - d0 || 1;
  const f = (v) => r0 + ((v - d0) / span) * (r1 - r0);
  f.invert = (x) => d0 + ((x - r0) / (r1 - r0)) * span;
  return f;
}

// "Nice" tick positions for a numeric or time axis.
function ticks(d0, d1, count) {
  const span = d1 - d0;
  if (!(span > 0)) return [d0];
  const raw = span / count;
  const power = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) || raw;
  const out = [];
  for (let v = Math.ceil(d0 / step) * step; v <= d1 + 1e-9; v += step) out.push(v);
  return out;
}

function timeTicks(t0, t1, count) {
  const steps = [1e3, 5e3, 10e3, 30e3, 60e3, 300e3, 600e3, 1800e3, 3600e3, 6 * 3600e3, 12 * 3600e3, 86400e3, 7 * 86400e3];
  const step = steps.find((s) => (t1 - t0) / s <= count) || steps[steps.length - 1];
  const out = [];
  for (let v = Math.ceil(t0 / step) * step; v <= t1; v += step) out.push(v);
  return out;
}
