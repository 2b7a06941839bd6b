// Reliability: MTBF over time (per window, with its 95% interval), interruptions per
// window, and the per-cause ledger as the Llama 3 table counts it, drawn as SVG bar charts.
"use strict";

const WINDOWS = 12;
const ASSUMED_SAVE_MINUTES = 5;
const HOUR = 3600e3;

// Time windows covering the incidents, aligned to whole hours or days.
function windows(incidents) {
  const times = incidents.map((i) => Date.parse(i.interruption?.start || i.opened));
  const last = Math.max(Date.now(), ...times) + 1;  // windows are [start, end): include the latest
  const first = times.length ? Math.min(...times) : last - 24 * HOUR;
  const unit = last - first > 4 * 24 * HOUR ? 24 * HOUR : HOUR;
  const step = Math.max(unit, Math.ceil((last - first) / WINDOWS / unit) * unit);
  const start = Math.floor(first / unit) * unit;
  const out = [];
  for (let t = start; t < last; t += step) out.push([t, Math.min(t + step, last)]);
  return out;
}

const iso = (ms) => new Date(ms).toISOString();

function lineChart(points, { yLabel, id }) {
  const width = 900, height = 270, left = 60, right = 16, top = 26, bottom = 36;
  const t0 = points[0].t0, t1 = points[points.length - 1].t1;
  const highs = points.flatMap((p) => [p.value, p.high].filter((v) => v !== null && v !== undefined && Number.isFinite(v)));
  const ymax = Math.max(1, ...highs) * 1.1;
  const x = scaleLinear(t0, t1, left, width - right);
  const y = scaleLinear(0, ymax, height - bottom, top);
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "chart", id, role: "img", "aria-label": yLabel });
  for (const v of ticks(0, ymax, 5)) {
    chart.append(svg("line", { x1: left, x2: width - right, y1: y(v), y2: y(v), class: "grid" }),
      svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, fmtNumber(v, 1)));
  }
  for (const tick of timeTicks(t0, t1, 8)) {
    chart.append(svg("text", { x: x(tick), y: height - bottom + 16, "text-anchor": "middle", class: "axis" },
      new Date(tick).toISOString().slice(5, 16).replace("T", " ")));
  }
  chart.append(svg("text", { x: 12, y: 12, class: "axis" }, `${yLabel}, per window; band: 95% interval`));
  const mid = (p) => (p.t0 + p.t1) / 2;
  const withCi = points.filter((p) => Number.isFinite(p.low) && Number.isFinite(p.high));
  if (withCi.length > 1) {
    const upper = withCi.map((p) => `${x(mid(p))},${y(p.high)}`);
    const lower = withCi.slice().reverse().map((p) => `${x(mid(p))},${y(p.low)}`);
    chart.append(svg("polygon", { points: [...upper, ...lower].join(" "), class: "ci-band" }, title("95% interval")));
  }
  const valued = points.filter((p) => Number.isFinite(p.value));
  if (valued.length > 1) chart.append(svg("polyline", { points: valued.map((p) => `${x(mid(p))},${y(p.value)}`).join(" "), class: "line" }));
  for (const p of valued) {
    chart.append(svg("circle", { cx: x(mid(p)), cy: y(p.value), r: 4, class: "point" },
      title(`${iso(p.t0).slice(0, 16)} – ${iso(p.t1).slice(0, 16)}: ${fmtNumber(p.value, 2)} h (${p.count} interruptions)`)));
  }
  return chart;
}

function columnChart(bars, { id, label }) {
  const width = 900, height = 200, left = 40, bottom = 30, top = 12;
  const peak = Math.max(1, ...bars.map((b) => b.value));
  const y = scaleLinear(0, peak, height - bottom, top);
  const step = Math.min(80, (width - left) / bars.length);
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "chart", id, role: "img", "aria-label": label });
  for (const v of ticks(0, peak, 4).filter(Number.isInteger)) {  // counts: whole ticks only
    chart.append(svg("text", { x: left - 6, y: y(v) + 4, "text-anchor": "end", class: "axis" }, fmtNumber(v, 0)),
      svg("line", { x1: left, x2: width, y1: y(v), y2: y(v), class: "grid" }));
  }
  bars.forEach((b, i) => {
    chart.append(svg("rect", { x: left + i * step + 2, y: y(b.value), width: Math.max(1, step - 4), height: y(0) - y(b.value), class: "column" },
      title(`${b.label}: ${b.value}`)));
    if (bars.length <= 16 || i % Math.ceil(bars.length / 16) === 0) {
      chart.append(svg("text", { x: left + i * step + step / 2, y: height - bottom + 16, "text-anchor": "middle", class: "axis" }, b.short));
    }
  });
  return chart;
}

function barChart(rows, { id, colour }) {
  const rowHeight = 22, left = 190, width = 560, right = 110;
  const peak = Math.max(1e-9, ...rows.map((r) => r.count));
  const x = scaleLinear(0, peak, left, width - right);
  const chart = svg("svg", { width, height: rows.length * rowHeight + 8, class: "chart", id, role: "img" });
  rows.forEach((r, i) => {
    const top = 4 + i * rowHeight;
    chart.append(svg("text", { x: left - 8, y: top + 15, "text-anchor": "end", class: "axis" }, r.name),
      svg("rect", { x: left, y: top + 3, width: Math.max(1, x(r.count) - left), height: rowHeight - 6, fill: colour(r) },
        title(`${r.name}: ${r.count} (${fmtNumber(r.share * 100, 1)}%), ${fmtNumber(r.gpu_hours_lost, 1)} GPU-h lost`)),
      svg("text", { x: x(r.count) + 6, y: top + 15, class: "axis" }, `${r.count} · ${fmtNumber(r.share * 100, 1)}%`));
  });
  return chart;
}

async function drawMtbf(spans) {
  const box = document.getElementById("mtbf");
  try {
    const answers = await Promise.all(spans.map(([t0, t1]) => api(`/v1/stats/mtbf?since=${iso(t0)}&until=${iso(t1)}`)));
    const points = answers.map((a, i) => ({ t0: spans[i][0], t1: spans[i][1], value: a.mtbf_hours ?? NaN,
      low: a.ci95?.[0] ?? NaN, high: a.ci95?.[1] ?? NaN, count: a.interruptions }));
    const whole = await api(`/v1/stats/mtbf`);
    box.replaceChildren(
      el("p", { id: "mtbf-now" }, "Over everything stored: ", el("strong", { text: `${fmtNumber(whole.mtbf_hours, 2)} h` }),
        ` between unplanned interruptions (${whole.interruptions} in ${fmtNumber(whole.observed_hours, 1)} h` +
        `${whole.ci95 ? `; 95% interval ${fmtNumber(whole.ci95[0], 2)}–${fmtNumber(whole.ci95[1], 2)} h` : ""}).`),
      lineChart(points, { yLabel: "MTBF (hours)", id: "mtbf-chart" }));
  } catch (error) {
    notAvailable(box, "MTBF statistics", error);
  }
}

function drawInterruptions(spans, incidents) {
  const bars = spans.map(([t0, t1]) => ({
    value: incidents.filter((i) => { const t = Date.parse(i.interruption?.start || i.opened); return t >= t0 && t < t1; }).length,
    label: `${iso(t0).slice(0, 16)} – ${iso(t1).slice(0, 16)}`,
    short: iso(t0).slice(5, 13).replace("T", " "),
  }));
  document.getElementById("interruptions").replaceChildren(
    incidents.length ? columnChart(bars, { id: "interruption-chart", label: "interruptions per window" })
      : el("p", { class: "muted", text: "No incidents yet." }));
}

async function drawLedger() {
  const causes = document.getElementById("causes");
  const categories = document.getElementById("categories");
  try {
    const ledger = await api("/v1/stats/causes");
    const causeRows = (ledger.causes || []).map((r) => ({ ...r, name: r.cause }));
    const categoryRows = (ledger.categories || []).map((r) => ({ ...r, name: r.category }));
    const colour = (r) => CATEGORY_COLOURS[r.category] || "#495057";
    const slow = ledger.degradations;  // fail-slow episodes: jobs that ran on, slower
    causes.replaceChildren(el("p", {}, `${ledger.unplanned} unplanned interruptions (${ledger.planned} planned, counted apart).` +
      (slow ? ` ${slow.count} slowdowns wasted ${fmtNumber(slow.gpu_hours_wasted, 1)} GPU-hours (counted apart).` : "")),
      causeRows.length ? barChart(causeRows, { id: "cause-chart", colour }) : el("p", { class: "muted", text: "None." }));
    categories.replaceChildren(categoryRows.length ? barChart(categoryRows, { id: "category-chart", colour })
      : el("p", { class: "muted", text: "None." }));
  } catch (error) {
    notAvailable(causes, "Cause ledger", error);
    notAvailable(categories, "Category ledger", error);
  }
}

// The checkpoint advice at the measured save cost, or at ASSUMED_SAVE_MINUTES when the
// store has no checkpoint durations to measure it from (the server says so with a 400).
async function checkpointAdvice(save) {
  const query = save ? `?save_minutes=${encodeURIComponent(save)}` : "";
  try {
    return { advice: await api(`/v1/stats/checkpoint${query}`), save };
  } catch (error) {
    if (!save && error.status === 400 && /save_minutes/.test(error.message)) return checkpointAdvice(ASSUMED_SAVE_MINUTES);
    throw error;
  }
}

async function drawCheckpoint() {
  const box = document.getElementById("checkpoint");
  try {
    const { advice: c, save } = await checkpointAdvice(null);
    const row = (k, v) => el("tr", {}, el("th", { text: k }), el("td", { class: "num", text: v }));
    box.replaceChildren(...[el("table", { class: "list compact", id: "checkpoint-table" }, el("tbody", {},
      row("MTBF", `${fmtNumber(c.mtbf_hours, 2)} h`),
      row("Young's interval", `${fmtNumber(c.young_minutes, 1)} min`),
      row("Daly's interval", `${fmtNumber(c.daly_minutes, 1)} min`),
      row("interval in use", `${fmtNumber(c.interval_minutes, 1)} min`),
      row("goodput at that interval", `${fmtNumber((c.goodput?.value ?? NaN) * 100, 1)}%`),
      row("goodput at the optimum", `${fmtNumber((c.goodput_at_optimum?.value ?? NaN) * 100, 1)}%`))),
    save ? el("p", { class: "muted", text: `No checkpoint durations stored: assuming a ${save}-minute save.` }) : null]
      .filter(Boolean));
  } catch (error) {
    notAvailable(box, "Checkpoint advice", error);
  }
}

async function main() {
  header("reliability");
  let incidents = [];
  try {
    incidents = (await api("/v1/incidents?limit=1000")).incidents.filter((i) => !i.planned && i.type !== "degradation");
  } catch (error) {
    notAvailable(document.getElementById("interruptions"), "Incidents", error);
  }
  const spans = windows(incidents);
  drawInterruptions(spans, incidents);
  await Promise.all([drawMtbf(spans), drawLedger(), drawCheckpoint()]);
}

main().finally(() => { document.body.dataset.ready = "true"; });
