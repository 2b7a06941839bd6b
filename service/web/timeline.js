// The unified incident timeline (after MegaScale's): one lane per host or component that
// matters, symptoms and hardware events as marks, the root cause's lane and the hang start
// highlighted. A 16,384-rank incident must not draw 16,384 rows: the root's host gets a lane
// per component, hosts with hardware events get a lane each (up to MAX_HOST_LANES), and every
// other event goes into one density lane, a histogram over time. A lane holding more than
// MAX_MARKS events is drawn as density too, so the SVG stays a few thousand nodes at most.
"use strict";

const SYMPTOM_KINDS = new Set(["nccl_timeout", "nccl_error", "host_heartbeat", "train_anomaly"]);
const LIFECYCLE_KINDS = new Set(["job_start", "job_end", "job_fail", "job_restart", "checkpoint_save",
  "checkpoint_load", "maintenance"]);
const MAX_HOST_LANES = 24;
const MAX_MARKS = 400;
const BINS = 160;
const SEVERITY_COLOURS = { critical: "#c92a2a", error: "#e8590c", warning: "#f08c00", info: "#868e96", debug: "#adb5bd" };

function eventClass(event) {
  if (LIFECYCLE_KINDS.has(event.kind)) return "life";
  if (SYMPTOM_KINDS.has(event.kind)) return "sym";
  return "hw";
}

// Hosts a component id names: a link `a~b` names both ends' hosts; fabric switches are their own.
function hostsOf(component) {
  if (!component) return [];
  return component.split("~").map((end) => end.split("/")[0]);
}

// Decide the lanes: [{key, label, kind: "component"|"host"|"job"|"aggregate", root, events}].
function planLanes(events, incident) {
  const root = incident.root_cause || {};
  const rootComponent = root.component || null;
  const rootHosts = new Set(hostsOf(rootComponent));
  const rootEnds = new Set(rootComponent ? rootComponent.split("~") : []);
  const evidence = new Set(root.evidence || []);
  // The root's own lane: its component, either end of a root link, or evidence the ingest
  // could only place on the host.
  const inRootLane = (e) => e.component === rootComponent || rootEnds.has(e.component)
    || (evidence.has(e.id) && rootHosts.has(e.host) && (!e.component || e.component === e.host));
  const lanes = new Map();
  const lane = (key, label, kind, isRoot) => {
    if (!lanes.has(key)) lanes.set(key, { key, label, kind, root: Boolean(isRoot), events: [] });
    return lanes.get(key);
  };
  // Hosts earning a lane of their own: evidence first, then hardware events, first come first.
  const ranked = [];
  const seen = new Set();
  const consider = (host) => { if (!rootHosts.has(host) && !seen.has(host)) { seen.add(host); ranked.push(host); } };
  for (const e of events) if (evidence.has(e.id)) consider(e.host);
  for (const e of events) if (eventClass(e) === "hw") consider(e.host);
  const ownLane = new Set(ranked.slice(0, MAX_HOST_LANES));
  if (rootComponent) lane(`c:${rootComponent}`, rootComponent, "component", true);
  const aggregateHosts = new Set();
  for (const e of events) {
    if (rootComponent && inRootLane(e)) {
      lane(`c:${rootComponent}`, rootComponent, "component", true).events.push(e);
    } else if (eventClass(e) === "life") {
      lane("job", incident.job ? `job ${incident.job}` : "lifecycle", "job").events.push(e);
    } else if (rootHosts.has(e.host)) {
      const component = e.component || e.host;
      lane(`c:${component}`, component, "component", component === rootComponent).events.push(e);
    } else if (ownLane.has(e.host)) {
      lane(`h:${e.host}`, e.host, "host", false).events.push(e);
    } else {
      aggregateHosts.add(e.host);
      lane("aggregate", "", "aggregate").events.push(e);
    }
  }
  const aggregate = lanes.get("aggregate");
  if (aggregate) {
    aggregate.label = `${aggregateHosts.size.toLocaleString("en-US")} other hosts`;
    aggregate.hosts = aggregateHosts.size;
  }
  const order = { component: 0, host: 1, aggregate: 2, job: 3 };
  return [...lanes.values()].sort((a, b) => (b.root - a.root) || (order[a.kind] - order[b.kind])
    || a.label.localeCompare(b.label, "en", { numeric: true }));
}

function markShape(event, x, y, isEvidence) {
  const cls = eventClass(event);
  const colour = cls === "sym" ? "#1c7ed6" : cls === "life" ? "#2b8a3e" : (SEVERITY_COLOURS[event.severity] || "#e8590c");
  const stroke = isEvidence ? { stroke: "#000", "stroke-width": 2.5 } : { stroke: "#fff", "stroke-width": 0.75 };
  const common = { fill: colour, class: `mark ${cls}${isEvidence ? " evidence" : ""}`, "data-id": event.id, ...stroke };
  if (cls === "hw") return svg("rect", { x: x - 5, y: y - 5, width: 10, height: 10, transform: `rotate(45 ${x} ${y})`, ...common });
  if (cls === "life") return svg("path", { d: `M${x},${y - 6} L${x + 6},${y + 5} L${x - 6},${y + 5} Z`, ...common });
  return svg("circle", { cx: x, cy: y, r: 3.5, ...common });
}

function densityBars(laneEvents, x, t0, t1, top, height, colour) {
  const counts = new Array(BINS).fill(0);
  const width = (t1 - t0) / BINS;
  for (const e of laneEvents) {
    const bin = Math.min(BINS - 1, Math.max(0, Math.floor((Date.parse(e.time) - t0) / width)));
    counts[bin] += 1;
  }
  const peak = counts.reduce((a, b) => Math.max(a, b));
  const bars = [];
  counts.forEach((count, bin) => {
    if (!count) return;
    const h = Math.max(2, (count / peak) * (height - 4));
    const from = t0 + bin * width;
    bars.push(svg("rect", { x: x(from), y: top + height - 2 - h, width: Math.max(1, x(from + width) - x(from) - 0.5), height: h,
      fill: colour, class: "density" }, title(`${count} events, ${fmtShortTime(from)}–${fmtShortTime(from + width)} UTC`)));
  });
  return bars;
}

// Draw into `container`; `onSelect(event)` is called when a mark is clicked.
function drawTimeline(container, events, incident, onSelect) {
  const lanes = planLanes(events, incident);
  const evidence = new Set(incident.root_cause?.evidence || []);
  const times = events.map((e) => Date.parse(e.time));
  const hang = incident.interruption?.start ? Date.parse(incident.interruption.start) : null;
  const end = incident.interruption?.end ? Date.parse(incident.interruption.end) : null;
  for (const t of [hang, end]) if (t !== null) times.push(t);
  if (!times.length) { container.replaceChildren(el("p", { class: "muted", text: "No events." })); return lanes; }
  let t0 = times.reduce((a, b) => Math.min(a, b));
  let t1 = times.reduce((a, b) => Math.max(a, b));
  const pad = Math.max((t1 - t0) * 0.04, 5000);
  t0 -= pad; t1 += pad;
  const labelWidth = 230;
  const laneHeight = 24;
  const axisHeight = 28;
  const width = Math.max(640, container.clientWidth || 960);
  const height = axisHeight + lanes.length * laneHeight + 20;  // room under the lanes for the markers' labels
  const x = scaleLinear(t0, t1, labelWidth + 8, width - 12);
  const chart = svg("svg", { width, height, viewBox: `0 0 ${width} ${height}`, class: "timeline-svg", role: "img",
    "aria-label": `timeline of ${incident.id}: ${lanes.length} lanes, ${events.length} events` });
  for (const tick of timeTicks(t0, t1, Math.floor((width - labelWidth) / 110))) {
    chart.append(svg("line", { x1: x(tick), x2: x(tick), y1: axisHeight - 6, y2: height, class: "grid" }),
      svg("text", { x: x(tick), y: axisHeight - 10, class: "axis", "text-anchor": "middle" }, fmtShortTime(tick)));
  }
  lanes.forEach((lane, index) => {
    const top = axisHeight + index * laneHeight;
    const mid = top + laneHeight / 2;
    const group = svg("g", { class: `lane ${lane.kind}${lane.root ? " root" : ""}`, "data-lane": lane.key });
    group.append(svg("rect", { x: 0, y: top, width, height: laneHeight, class: lane.root ? "lane-bg root" : index % 2 ? "lane-bg odd" : "lane-bg" }));
    const label = lane.kind === "aggregate" ? `${lane.label} · ${lane.events.length.toLocaleString("en-US")} events` : lane.label;
    group.append(svg("text", { x: 8, y: mid + 4, class: `lane-label${lane.root ? " root" : ""}` },
      lane.root ? `★ ${label}` : label, title(label)));
    if (lane.kind === "aggregate" || lane.events.length > MAX_MARKS) {
      group.append(...densityBars(lane.events, x, t0, t1, top, laneHeight, lane.kind === "aggregate" ? "#74c0fc" : "#ffa94d"));
    } else {
      for (const e of lane.events) {
        const mark = markShape(e, x(Date.parse(e.time)), mid, evidence.has(e.id));
        mark.append(title(`${fmtTime(e.time)} ${e.kind} ${e.component || e.host}${e.rank !== null && e.rank !== undefined ? ` rank ${e.rank}` : ""}\n${e.message || ""}`));
        mark.addEventListener("click", () => onSelect(e));
        group.append(mark);
      }
    }
    chart.append(group);
  });
  const marker = (t, cls, text) => {
    const nearRight = x(t) > width - 160;  // keep the label inside the chart
    return svg("g", { class: cls }, svg("line", { x1: x(t), x2: x(t), y1: axisHeight - 4, y2: height }),
      svg("text", { x: x(t) + (nearRight ? -4 : 4), y: height - 4, "text-anchor": nearRight ? "end" : "start" }, text));
  };
  if (hang !== null) chart.append(marker(hang, "hang-start", `hang start ${fmtShortTime(hang)}`));
  if (end !== null) chart.append(marker(end, "recovered", `recovered ${fmtShortTime(end)}`));
  container.replaceChildren(chart);
  return lanes;
}
