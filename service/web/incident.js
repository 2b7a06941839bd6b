// One incident: headline, unified timeline, evidence, candidates, action, the root
// component's neighbourhood, and on-call's acknowledge / resolve.
"use strict";

const MAX_NEIGHBOURS = 24;
const LIFECYCLE_BEFORE_MS = 35 * 60e3;  // the last checkpoint before the fault (every 30 min is common)
const LIFECYCLE_AFTER_MS = 10 * 60e3;
const incidentId = new URLSearchParams(location.search).get("id");

function headline(incident) {
  const root = incident.root_cause || {};
  const interruption = incident.interruption || {};
  const fact = (label, value) => el("div", { class: "fact" }, el("div", { class: "label", text: label }), el("div", { class: "value" }, value));
  return [
    el("p", { class: "explanation", id: "explanation", text: root.explanation || "No explanation." }),
    el("div", { class: "facts" },
      fact("status", badge(incident.status)),
      fact("root cause", [categoryChip(root.category), " ", el("strong", { text: root.cause || "unknown" }),
        root.confirmed ? " (confirmed by on-call)" : ""]),
      fact("component", el("span", { class: "mono", id: "root-component", text: root.component || "—" })),
      fact("confidence", `${fmtNumber((root.confidence || 0) * 100, 0)}%`),
      fact("job", incident.job || incident.scope || "—"),
      fact("symptoms / hosts", `${fmtNumber(incident.symptoms, 0)} / ${fmtNumber(incident.hosts, 0)}`),
      fact("interrupted", `${fmtTime(interruption.start)} → ${interruption.end ? fmtTime(interruption.end) : "ongoing"}`),
      fact("GPUs · GPU-h lost", `${fmtNumber(interruption.gpus, 0)} · ${fmtNumber(interruption.gpu_hours_lost, 1)}`)),
  ];
}

function eventTable(events, id) {
  if (!events.length) return el("p", { class: "muted", text: "None." });
  return el("table", { class: "list compact", id },
    el("thead", {}, el("tr", {}, ["Time", "Host", "Component", "Kind", "Message"].map((h) => el("th", { text: h })))),
    el("tbody", {}, events.map((e) => el("tr", {},
      el("td", { text: fmtTime(e.time) }), el("td", { text: e.host }), el("td", { class: "mono", text: e.component || "—" }),
      el("td", { text: e.kind }), el("td", { class: "message", text: e.message || JSON.stringify(e.attrs || {}) })))));
}

function candidates(list) {
  if (!list?.length) return el("p", { class: "muted", text: "None." });
  return el("table", { class: "list compact", id: "candidate-table" }, el("tbody", {}, list.map((c) => el("tr", {},
    el("td", { class: "mono", text: c.component || "—" }),
    el("td", { class: "bar-cell" }, el("div", { class: "bar", style: `width:${Math.round((c.score || 0) * 100)}%` })),
    el("td", { class: "num", text: `${fmtNumber((c.score || 0) * 100, 0)}%` })))));
}

function action(incident) {
  const a = incident.action || {};
  return el("div", { class: `action ${a.kind || "none"}`, id: "action-box" },
    el("div", { class: "value", text: actionText(a) }),
    a.detail ? el("p", { text: a.detail }) : null);
}

// Neighbours as ids (GET /v1/topology/components/{id}); each one's link type from `links`.
function neighbourList(data) {
  const linkType = new Map();
  for (const link of data.links || []) {
    linkType.set(link.a === data.id ? link.b : link.a, link.type);
  }
  return (data.neighbours || []).map((n) => (typeof n === "string" ? { id: n } : { id: n.id, type: n.type }))
    .filter((n) => n.id).map((n) => ({ ...n, link: linkType.get(n.id) }));
}

function neighbourhoodGraph(centre, centreType, neighbours, involved) {
  const size = 360;
  const c = size / 2;
  const radius = 130;
  const shown = neighbours.slice(0, MAX_NEIGHBOURS);
  const chart = svg("svg", { width: size, height: size, viewBox: `0 0 ${size} ${size}`, class: "neighbourhood-svg", role: "img",
    "aria-label": `${centre} and ${neighbours.length} neighbours` });
  shown.forEach((n, i) => {
    const angle = (2 * Math.PI * i) / shown.length - Math.PI / 2;
    const nx = c + radius * Math.cos(angle);
    const ny = c + radius * Math.sin(angle);
    const hit = involved.has(n.id);
    chart.append(svg("line", { x1: c, y1: c, x2: nx, y2: ny, class: `edge ${n.link || ""}` }, title(n.link || "link")),
      svg("circle", { cx: nx, cy: ny, r: 7, class: `node${hit ? " involved" : ""}` }, title(`${n.id}${n.type ? ` (${n.type})` : ""}`)),
      svg("text", { x: nx, y: ny + (ny < c ? -11 : 18), "text-anchor": "middle", class: "node-label" }, n.id.replace(/^.*\//, "")));
  });
  chart.append(svg("circle", { cx: c, cy: c, r: 12, class: "node root" }, title(centre)),
    svg("text", { x: c, y: c + 28, "text-anchor": "middle", class: "node-label root" }, `${centre}${centreType ? ` (${centreType})` : ""}`));
  return chart;
}

async function neighbourhood(incident, events) {
  const box = document.getElementById("neighbourhood");
  const component = incident.root_cause?.component;
  if (!component) { box.replaceChildren(el("p", { class: "muted", text: "No root component." })); return; }
  try {
    const path = component.split("/").map(encodeURIComponent).join("/");
    const data = await api(`/v1/topology/components/${path}`);
    const neighbours = neighbourList(data);
    if (!neighbours.length) {
      box.replaceChildren(el("p", { class: "muted", text: `The topology records no links of ${component} (${data.type || "component"}).` }));
      return;
    }
    const involved = new Set(events.flatMap((e) => [e.component, e.host]));
    box.replaceChildren(neighbourhoodGraph(component, data.type, neighbours, involved),
      el("p", { class: "muted" }, `${neighbours.length} neighbours`, neighbours.length > MAX_NEIGHBOURS ? ` (first ${MAX_NEIGHBOURS} drawn)` : "",
        "; ringed: seen in this incident."));
  } catch (error) {
    notAvailable(box, "Topology", error);
  }
}

function oncall(incident) {
  const note = el("input", { id: "note", type: "text", placeholder: "note (optional)", size: "50" });
  const result = el("span", { class: "muted", id: "oncall-result" });
  const send = async (body) => {
    try {
      const text = note.value.trim();
      await api(`/v1/incidents/${encodeURIComponent(incident.id)}`, { method: "PATCH", body: JSON.stringify(text ? { ...body, note: text } : body) });
      location.reload();
    } catch (error) {
      result.textContent = error.message;
    }
  };
  const notes = (incident.notes || []).map((n) => el("li", {}, `${fmtTime(n.time)}${n.author ? ` ${n.author}` : ""}: ${n.text}`));
  return [
    el("div", { class: "toolbar" }, note, " ",
      el("button", { id: "ack", disabled: incident.status !== "open" ? "disabled" : null, onclick: () => send({ status: "acknowledged" }), text: "Acknowledge" }), " ",
      el("button", { id: "resolve", disabled: incident.status === "resolved" ? "disabled" : null, onclick: () => send({ status: "resolved" }), text: "Resolve" }), " ",
      result),
    el("ul", { class: "notes" }, notes),
  ];
}

// The job's starts, restarts and checkpoints around the incident: how much work the
// interruption rolled back and when the job came back. Not members, so fetched apart.
async function lifecycle(incident, members) {
  if (!incident.job || !members.length) return [];
  const first = Date.parse(members[0].time);
  const last = Math.max(Date.parse(members[members.length - 1].time), Date.parse(incident.interruption?.end || 0));
  const params = new URLSearchParams({ job: incident.job, since: new Date(first - LIFECYCLE_BEFORE_MS).toISOString(),
    until: new Date(last + LIFECYCLE_AFTER_MS).toISOString(), limit: "1000" });
  for (const kind of LIFECYCLE_KINDS) params.append("kind", kind);
  const known = new Set(members.map((e) => e.id));
  try {
    return (await api(`/v1/events?${params}`)).events.filter((e) => !known.has(e.id));
  } catch (_) {
    return [];  // the timeline stands without them
  }
}

// The cluster's GB200 NVL72 racks for the timeline's rack lanes; none without a topology.
async function rackLayout() {
  try {
    return rackIndex((await api("/v1/topology/racks")).racks);
  } catch (_) {
    return null;  // no topology (404) or an older server: host lanes as before
  }
}

async function main() {
  header("incidents");
  if (!incidentId) { notAvailable(document.getElementById("headline"), "Incident", new Error("no ?id= in the address")); return; }
  document.getElementById("title").textContent = `Incident ${incidentId}`;
  document.title = `faultgraph — ${incidentId}`;
  let incident;
  try {
    incident = await api(`/v1/incidents/${encodeURIComponent(incidentId)}`);
  } catch (error) {
    notAvailable(document.getElementById("headline"), "Incident", error);
    return;
  }
  document.getElementById("headline").replaceChildren(...headline(incident));
  document.getElementById("action").replaceChildren(action(incident));
  document.getElementById("candidates").replaceChildren(candidates(incident.candidates));
  document.getElementById("oncall").replaceChildren(...oncall(incident));
  let events = [];
  try {
    events = (await api(`/v1/incidents/${encodeURIComponent(incidentId)}/timeline`)).events;
    events = events.concat(await lifecycle(incident, events));
    const racks = await rackLayout();
    const detail = document.getElementById("event-detail");
    const started = performance.now();
    const lanes = drawTimeline(document.getElementById("timeline"), events, incident, (e) => {
      detail.classList.remove("muted");
      detail.replaceChildren(el("strong", { text: `${fmtTime(e.time)} · ${e.kind} · ${e.component || e.host}` }),
        e.rank !== null && e.rank !== undefined ? ` · rank ${e.rank}` : "", el("pre", { text: `${e.message || ""}\n${JSON.stringify(e.attrs || {}, null, 1)}` }));
    }, racks);
    document.getElementById("timeline").dataset.lanes = String(lanes.length);
    document.getElementById("timeline").dataset.drawMs = String(Math.round(performance.now() - started));
  } catch (error) {
    notAvailable(document.getElementById("timeline"), "Timeline", error);
  }
  const evidenceIds = new Set(incident.root_cause?.evidence || []);
  document.getElementById("evidence").replaceChildren(eventTable(events.filter((e) => evidenceIds.has(e.id)), "evidence-table"));
  await neighbourhood(incident, events);
}

main().finally(() => { document.body.dataset.ready = "true"; });
