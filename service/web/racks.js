// GB200 NVL72 racks on the timeline. A rack is one NVLink domain: 18 compute trays (hosts of
// 4 GPUs) and 9 switch trays of 2 NVSwitch chips each, whose NVOS logs under a host of its own
// (`rack00-nvsw6`). Events of a rack's trays go on the rack's lane, not on 27 host lanes;
// the blamed rack opens to a lane per tray. Data: GET /v1/topology/racks.
"use strict";

// The rack layout as lookups: rack id → its trays; host and rack-part id → {rack, tray}.
function rackIndex(layout) {
  const index = { racks: new Map(), hosts: new Map(), parts: new Map() };
  for (const rack of layout || []) {
    const trays = [];
    for (const t of rack.compute_trays) {
      const tray = { key: `c${t.tray}`, kind: "compute", number: t.tray, host: t.host, label: `compute tray ${t.tray} · ${t.host}` };
      trays.push(tray);
      index.hosts.set(t.host, { rack: rack.id, tray });
    }
    for (const t of rack.switch_trays) {
      const tray = { key: `s${t.tray}`, kind: "switch", number: t.tray, host: t.host, chips: t.chips,
        label: `switch tray ${t.tray}${t.host ? ` · ${t.host}` : ""}` };
      trays.push(tray);
      if (t.host) index.hosts.set(t.host, { rack: rack.id, tray });
      for (const chip of t.chips) index.parts.set(chip, { rack: rack.id, tray });
    }
    for (const part of rack.power || []) index.parts.set(part, { rack: rack.id, tray: null });
    index.parts.set(rack.id, { rack: rack.id, tray: null });
    index.racks.set(rack.id, { id: rack.id, trays, computeTrays: rack.compute_trays.length, switchTrays: rack.switch_trays.length });
  }
  return index;
}

// Where a component (or, lacking one, an event's host) sits: a rack part by its id, a tray's
// part by its host (`node0005/gpu2`, either end of a link). Null outside every rack.
function rackPlace(index, component, host) {
  if (!index || !index.racks.size) return null;
  if (component) {
    if (index.parts.has(component)) return index.parts.get(component);
    for (const end of component.split("~")) {
      if (index.parts.has(end)) return index.parts.get(end);
      const head = end.split("/")[0];
      if (index.hosts.has(head)) return index.hosts.get(head);
    }
  }
  return host && index.hosts.has(host) ? index.hosts.get(host) : null;
}

// The blamed part in words, for the rack's lane: {rack, tray, text} or null outside racks.
function blamedPart(index, component) {
  const place = component ? rackPlace(index, component, null) : null;
  if (!place) return null;
  const { rack, tray } = place;
  let text;
  if (!tray) text = component === rack ? "the rack's NVLink fabric" : component.replace(`${rack}/`, "");
  else if (tray.kind === "switch") {
    const chip = component === tray.host ? "" : `NVSwitch chip ${component.replace(`${rack}/`, "")} in `;
    text = `${chip}switch tray ${tray.number}`;
  } else {
    text = component === tray.host ? `compute tray ${tray.number} (${tray.host})` : `${component} in compute tray ${tray.number}`;
  }
  return { rack, tray, text };
}
