// The unified incident timeline (after MegaScale's): one lane per host or component that
// matters, symptoms and hardware events as marks, the root cause's lane and the hang start
// highlighted. A 16,384-rank incident must not draw 16,384 rows: the root's host gets a lane
// per component, hosts with hardware events get a lane each (up to MAX_HOST_LANES), and every
// other event goes into one density lane, a histogram over time. A lane holding more than
// MAX_MARKS events is drawn as density too, so the SVG stays a few thousand nodes at most.
// On GB200 NVL72 racks (racks.js, load it before this file) a rack takes the place of a host:
// one lane per rack, and the blamed rack opened to its 18 compute trays and 9 switch trays.
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

// Decide the lanes: [{key, label, kind: "component"|"host"|"rack"|"tray"|"job"|"aggregate", root, events}].
// With a rack index (racks.js), events of a rack's trays go on rack lanes; the blamed rack is
// open (a lane per tray) unless `toggled` names it, other racks are closed unless it does.
function planLanes(events, incident, racks = null, toggled = new Set()) {
  const root = incident.root_cause || {};
  const blamed = blamedPart(racks, root.component);
  const rootComponent = blamed ? null : root.component || null;  // a rack part's lane is its rack's
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
  const placed = new Map(events.map((e) => [e, eventClass(e) === "life" ? null : rackPlace(racks, e.component, e.host)]));
  for (const e of events) if (evidence.has(e.id) && !placed.get(e)) consider(e.host);
  for (const e of events) if (eventClass(e) === "hw" && !placed.get(e)) consider(e.host);
  const ownLane = new Set(ranked.slice(0, MAX_HOST_LANES));
  if (rootComponent) lane(`c:${rootComponent}`, rootComponent, "component", true);
  const aggregateHosts = new Set();
  const rackEvents = new Map();
  for (const e of events) {
    if (placed.get(e)) {
      const rack = placed.get(e).rack;
      if (!rackEvents.has(rack)) rackEvents.set(rack, []);
      rackEvents.get(rack).push(e);
    } else if (rootComponent && inRootLane(e)) {
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
  const blocks = rackBlocks(rackEvents, placed, racks, blamed, evidence, toggled, (e) => {
    aggregateHosts.add(e.host);
    lane("aggregate", "", "aggregate").events.push(e);
  });
  const aggregate = lanes.get("aggregate");
  if (aggregate) {
    aggregate.label = `${aggregateHosts.size.toLocaleString("en-US")} other hosts`;
    aggregate.hosts = aggregateHosts.size;
  }
  const order = { component: 0, host: 1, aggregate: 2, job: 3 };
  const sorted = [...lanes.values()].sort((a, b) => (b.root - a.root) || (order[a.kind] - order[b.kind])
    || a.label.localeCompare(b.label, "en", { numeric: true }));
  const tail = sorted.filter((l) => l.kind === "aggregate" || l.kind === "job");
  const [first, ...rest] = blocks;
  const rootBlock = blamed && first ? first : [];
  return [...rootBlock, ...sorted.filter((l) => !tail.includes(l)), ...(blamed ? rest : blocks).flat(), ...tail];
}

// Rack lanes, one block per rack: its lane, then (when open) a lane per compute and switch
// tray. The blamed rack first, then racks with evidence or hardware events, up to
// MAX_HOST_LANES racks; the others' events go to `overflow`.
function rackBlocks(rackEvents, placed, racks, blamed, evidence, toggled, overflow) {
  const weight = (rack) => (blamed?.rack === rack ? 0
    : rackEvents.get(rack).some((e) => evidence.has(e.id)) ? 1 : rackEvents.get(rack).some((e) => eventClass(e) === "hw") ? 2 : 3);
  const ranked = [...rackEvents.keys()].sort((a, b) => (weight(a) - weight(b)) || a.localeCompare(b, "en", { numeric: true }));
  for (const rack of ranked.slice(MAX_HOST_LANES)) rackEvents.get(rack).forEach(overflow);
  return ranked.slice(0, MAX_HOST_LANES).map((id) => {
    const rack = racks.racks.get(id);
    const isRoot = blamed?.rack === id;
    const open = isRoot !== toggled.has(id);
    const all = rackEvents.get(id);
    const label = `${open ? "▾" : "▸"} ${id} · ${isRoot ? blamed.text : `${rack.computeTrays} compute + ${rack.switchTrays} switch trays`}`;
    const head = { key: `r:${id}`, label, kind: "rack", rack: id, open, root: isRoot, part: isRoot ? blamed.text : null,
      events: open ? all.filter((e) => !placed.get(e).tray) : all };
    if (!open) return [head];
    const trays = rack.trays.map((tray) => ({ key: `t:${id}:${tray.key}`, label: tray.label, kind: "tray", rack: id, tray: tray.key,
      root: isRoot && blamed.tray === tray, events: all.filter((e) => placed.get(e).tray === tray) }));
    return [head, ...trays];
  });
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

// Draw into `container`; `onSelect(event)` is called when a mark is clicked. `racks` (a
// rackIndex) groups the lanes of GB200 NVL72 racks; clicking a rack's label opens or closes it.
function drawTimeline(container, events, incident, onSelect, racks = null, toggled = new Set()) {
  const lanes = planLanes(events, incident, racks, toggled);
  container.dataset.lanes = String(lanes.length);
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
  const labelWidth = Math.min(440, Math.max(230, 24 + 7.3 * Math.max(...lanes.map((l) => l.label.length))));
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
    const group = svg("g", { class: `lane ${lane.kind}${lane.root ? " root" : ""}${lane.open ? " open" : ""}`, "data-lane": lane.key,
      "data-rack": lane.rack, "data-tray": lane.tray });
    group.append(svg("rect", { x: 0, y: top, width, height: laneHeight, class: lane.root ? "lane-bg root" : index % 2 ? "lane-bg odd" : "lane-bg" }));
    const label = lane.kind === "aggregate" ? `${lane.label} · ${lane.events.length.toLocaleString("en-US")} events` : lane.label;
    const text = svg("text", { x: lane.kind === "tray" ? 24 : 8, y: mid + 4, class: `lane-label${lane.root ? " root" : ""}` },
      lane.root ? `★ ${label}` : label, title(lane.kind === "rack" ? `${label} (click to ${lane.open ? "close" : "open"} its trays)` : label));
    if (lane.kind === "rack") {
      text.addEventListener("click", () => {
        if (toggled.has(lane.rack)) toggled.delete(lane.rack); else toggled.add(lane.rack);
        drawTimeline(container, events, incident, onSelect, racks, toggled);
      });
    }
    group.append(text);
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
