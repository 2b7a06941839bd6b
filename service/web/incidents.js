// The incidents page: open ones first, then the most recent, refreshed every 15 s.
"use strict";

const REFRESH_MS = 15000;

function incidentRow(incident) {
  const root = incident.root_cause || {};
  const action = incident.action || {};
  const start = Date.parse(incident.interruption?.start || incident.opened);
  const end = incident.interruption?.end ? Date.parse(incident.interruption.end) : null;
  return el("tr", { class: `status-${incident.status}`, "data-id": incident.id },
    el("td", {}, el("a", { href: `/ui/incident.html?id=${encodeURIComponent(incident.id)}`, text: incident.id })),
    el("td", {}, badge(incident.status)),
    el("td", { text: fmtTime(incident.interruption?.start || incident.opened) }),
    el("td", { text: incident.job || incident.scope || "—" }),
    el("td", {}, categoryChip(root.category), " ", el("strong", { text: root.cause || "unknown" }),
      root.confirmed ? el("span", { class: "muted", text: " (confirmed)" }) : null),
    el("td", { class: "mono", text: root.component || "—" }),
    el("td", { class: "num", text: fmtNumber(incident.symptoms, 0) }),
    el("td", { class: "num", text: fmtNumber(incident.hosts, 0) }),
    el("td", { text: actionText(action) }),
    el("td", { class: "num", text: end ? fmtDuration(end - start) : "ongoing" }),
    el("td", { class: "num", text: fmtNumber(incident.interruption?.gpu_hours_lost, 1) }));
}

function table(incidents) {
  if (!incidents.length) return el("p", { class: "muted", text: "No incidents." });
  const head = ["Incident", "Status", "Started", "Job / scope", "Root cause", "Component", "Symptoms", "Hosts",
    "Action", "Down for", "GPU-h lost"];
  return el("table", { class: "list", id: "incident-table" },
    el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))),
    el("tbody", {}, incidents.map(incidentRow)));
}

function summary(open, recent) {
  const dayAgo = Date.now() - 86400e3;
  const lastDay = recent.filter((i) => Date.parse(i.opened) >= dayAgo).length;
  const lost = recent.reduce((sum, i) => sum + (i.interruption?.gpu_hours_lost || 0), 0);
  const card = (label, value, cls) => el("div", { class: `card ${cls || ""}` }, el("div", { class: "value", text: value }),
    el("div", { class: "label", text: label }));
  return [card("open", String(open.length), open.length ? "alarm" : "calm"), card("opened in the last 24 h", String(lastDay)),
    card(`GPU-hours lost (last ${recent.length})`, fmtNumber(lost, 0))];
}

async function load() {
  const status = document.getElementById("status").value;
  const box = document.getElementById("incidents");
  try {
    const [open, recent] = await Promise.all([
      api("/v1/incidents?status=open&limit=1000"),
      api(`/v1/incidents?limit=200${status ? `&status=${status}` : ""}`),
    ]);
    document.getElementById("summary").replaceChildren(...summary(open.incidents, recent.incidents));
    // Open incidents first (they need someone), then the rest newest first.
    const shown = status ? recent.incidents
      : [...open.incidents, ...recent.incidents.filter((i) => i.status !== "open")];
    box.replaceChildren(table(shown));
    document.getElementById("refreshed").textContent = `updated ${new Date().toISOString().slice(11, 19)} UTC`;
  } catch (error) {
    notAvailable(box, "Incidents", error);
  }
  document.body.dataset.ready = "true";
}

header("incidents");
document.getElementById("status").addEventListener("change", load);
load();
setInterval(load, REFRESH_MS);
