// Fleet: which components are out (by state), how long repairs take by cause, which units
// keep failing. Reads GET /v1/components and GET /v1/stats/fleet.
"use strict";

const OUT_STATES = ["faulty", "drained", "in_repair", "suspect"];

function card(label, value, { alarm = false, id } = {}) {
  return el("div", { class: alarm ? "card alarm" : "card", id },
    el("div", { class: "value", text: value }), el("div", { class: "label", text: label }));
}

const hours = (value) => (value === null || value === undefined ? "—" : `${fmtNumber(value, 1)} h`);
const percent = (value) => (value === null || value === undefined ? "—" : `${fmtNumber(value * 100, 3)}%`);

function drawComponents(components) {
  const box = document.getElementById("components");
  if (!components.length) {
    box.replaceChildren(el("p", { class: "muted", text: "Every component with a recorded state is healthy." }));
    return;
  }
  const link = (id) => (id ? el("a", { href: `/ui/incident.html?id=${encodeURIComponent(id)}`, text: id }) : "—");
  box.replaceChildren(el("table", { class: "list compact", id: "component-table" },
    el("thead", {}, el("tr", {}, ...["component", "type", "state", "since", "cause", "incident", "reason"].map((h) => el("th", { text: h })))),
    el("tbody", {}, components.map((c) => el("tr", { "data-component": c.component, "data-state": c.state },
      el("td", { class: "mono", text: c.component }), el("td", { text: c.type || "—" }),
      el("td", {}, el("span", { class: `badge state-${c.state}`, text: c.state })),
      el("td", { text: fmtTime(c.since) }), el("td", { text: c.cause || "—" }),
      el("td", {}, link(c.incident)), el("td", { text: c.reason || "—" }))))));
}

function mttrChart(rows) {
  const rowHeight = 24, left = 190, width = 620, right = 150;
  const peak = Math.max(1e-9, ...rows.map((r) => r.mttr_p90_hours ?? r.mttr_median_hours ?? 0));
  const x = scaleLinear(0, peak, left, width - right);
  const chart = svg("svg", { width, height: rows.length * rowHeight + 8, class: "chart", id: "mttr-chart", role: "img",
    "aria-label": "median and p90 time to repair by cause" });
  rows.forEach((r, i) => {
    const top = 4 + i * rowHeight;
    chart.append(svg("text", { x: left - 8, y: top + 16, "text-anchor": "end", class: "axis" }, r.cause));
    if (r.mttr_median_hours !== null) {
      chart.append(svg("rect", { x: left, y: top + 4, width: Math.max(1, x(r.mttr_median_hours) - left), height: rowHeight - 8,
        class: "column" }, title(`${r.cause}: median ${hours(r.mttr_median_hours)}, p90 ${hours(r.mttr_p90_hours)}, ${r.repaired} of ${r.faults} repaired`)));
      chart.append(svg("line", { x1: x(r.mttr_p90_hours), x2: x(r.mttr_p90_hours), y1: top + 2, y2: top + rowHeight - 2, class: "p90" }));
    }
    const label = r.mttr_median_hours === null ? `${r.faults} fault${r.faults === 1 ? "" : "s"}, none repaired yet`
      : `${hours(r.mttr_median_hours)} (p90 ${hours(r.mttr_p90_hours)})`;
    chart.append(svg("text", { x: (r.mttr_median_hours === null ? left : Math.max(x(r.mttr_p90_hours), x(r.mttr_median_hours))) + 6,
      y: top + 16, class: "axis" }, label));
  });
  return chart;
}

function drawOffenders(rows) {
  const box = document.getElementById("offenders");
  if (!rows.length) {
    box.replaceChildren(el("p", { class: "muted", text: "No unit fails more often than chance explains." }));
    return;
  }
  box.replaceChildren(el("table", { class: "list compact", id: "offender-table" },
    el("thead", {}, el("tr", {}, ...["component", "faults", "expected", "p-value"].map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((r) => el("tr", { "data-component": r.component },
      el("td", { class: "mono", text: r.component }), el("td", { class: "num", text: String(r.faults) }),
      el("td", { class: "num", text: fmtNumber(r.expected, 2) }),
      el("td", { class: "num", text: r.p_value.toExponential(1) }))))));
}

// Everything for one component type ("" for all), redrawn when the selector changes.
async function draw(type) {
  const summary = document.getElementById("fleet-summary");
  summary.replaceChildren();
  const typed = type ? `&type=${encodeURIComponent(type)}` : "";
  try {
    const components = (await api(`/v1/components?state=${OUT_STATES.join(",")}${typed}`)).components;
    const count = (state) => components.filter((c) => c.state === state).length;
    summary.append(card("faulty", String(count("faulty")), { alarm: count("faulty") > 0, id: "count-faulty" }),
      card("drained", String(count("drained")), { id: "count-drained" }),
      card("in repair", String(count("in_repair")), { id: "count-in_repair" }),
      card("suspect", String(count("suspect")), { id: "count-suspect" }));
    drawComponents(components);
  } catch (error) {
    notAvailable(document.getElementById("components"), "Component states", error);
  }
  try {
    const stats = await api(`/v1/stats/fleet${type ? `?type=${encodeURIComponent(type)}` : ""}`);
    summary.append(card("faults / 1,000 unit-days", fmtFigures(stats.faults_per_1000_unit_days), { id: "fault-rate" }),
      card("MTTR median · p90", `${hours(stats.mttr_hours.median)} · ${hours(stats.mttr_hours.p90)}`, { id: "mttr-overall" }),
      card("availability", percent(stats.availability), { id: "availability" }));
    const rows = stats.by_cause || [];
    document.getElementById("mttr").replaceChildren(rows.length ? mttrChart(rows)
      : el("p", { class: "muted", text: "No faults in the window." }));
    drawOffenders(stats.repeat_offenders || []);
  } catch (error) {
    notAvailable(document.getElementById("mttr"), "Fleet statistics", error);
    notAvailable(document.getElementById("offenders"), "Repeat offenders", error);
  }
}

async function main() {
  header("fleet");
  const select = document.getElementById("type");
  select.addEventListener("change", async () => {
    document.body.dataset.drawn = "";
    await draw(select.value);
    document.body.dataset.drawn = select.value || "all";
  });
  await draw("");
}

main().finally(() => { document.body.dataset.ready = "true"; });
