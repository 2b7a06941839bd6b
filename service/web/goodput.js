// Effective training time on the reliability page: η measured from the events beside the
// first-order model's η at the measured settings, and where the lost hours went.
// Reads GET /v1/stats/goodput; marks <body data-goodput-ready> when drawn.
"use strict";

const LOST_LABELS = { downtime: "downtime", rework: "rework (rolled back)", checkpoint: "checkpoint stalls",
  degradation: "slowdowns", planned: "planned maintenance" };

function lostChart(lost, wall, unit) {
  const rows = Object.entries(lost);
  const rowHeight = 22, left = 170, width = 560, right = 130;
  const peak = Math.max(1e-9, ...rows.map(([, h]) => h));
  const x = scaleLinear(0, peak, left, width - right);
  const chart = svg("svg", { width, height: rows.length * rowHeight + 8, class: "chart", id: "lost-chart", role: "img",
    "aria-label": "hours lost by bucket" });
  rows.forEach(([bucket, h], i) => {
    const top = 4 + i * rowHeight;
    chart.append(svg("text", { x: left - 8, y: top + 15, "text-anchor": "end", class: "axis" }, LOST_LABELS[bucket] || bucket),
      svg("rect", { x: left, y: top + 3, width: Math.max(1, x(h) - left), height: rowHeight - 6, class: "column" },
        title(`${bucket}: ${fmtNumber(h, 2)} ${unit}`)),
      svg("text", { x: x(h) + 6, y: top + 15, class: "axis" }, `${fmtNumber(h, 2)} ${unit} · ${fmtNumber(wall ? 100 * h / wall : 0, 1)}%`));
  });
  return chart;
}

async function drawGoodput() {
  const box = document.getElementById("goodput");
  if (!box) return;
  try {
    const g = await api("/v1/stats/goodput");
    if (!g.jobs) {
      box.replaceChildren(el("p", { class: "muted", text: "No job with running time in the stored events." }));
      return;
    }
    const eta = (value) => (value === null || value === undefined ? "—" : `${fmtNumber(100 * value, 1)}%`);
    box.replaceChildren(
      el("div", { class: "cards" },
        el("div", { class: "card", id: "eta-measured" }, el("div", { class: "value", text: eta(g.eta) }),
          el("div", { class: "label", text: "η measured (productive / wall)" })),
        el("div", { class: "card", id: "eta-model" }, el("div", { class: "value", text: eta(g.model.eta) }),
          el("div", { class: "label", text: "η first-order model at measured settings" }))),
      el("p", { class: "muted", text: `${g.jobs} job(s): ${fmtNumber(g.productive_hours, 1)} of ` +
        `${fmtNumber(g.wall_hours, 1)} GPU-hours productive. 90% is the bar front-line teams hold themselves to.` }),
      lostChart(g.lost, g.wall_hours, "GPU-h"),
      g.by_cause.length ? el("table", { class: "list compact", id: "goodput-causes" },
        el("thead", {}, el("tr", {}, el("th", { text: "cause" }), el("th", { text: "GPU-hours lost" }))),
        el("tbody", {}, g.by_cause.map((r) => el("tr", {}, el("td", { text: r.cause }),
          el("td", { class: "num", text: fmtNumber(r.hours, 2) }))))) : null);
  } catch (error) {
    notAvailable(box, "Effective training time", error);
  }
}

drawGoodput().finally(() => { document.body.dataset.goodputReady = "true"; });
