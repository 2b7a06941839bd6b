// Remediation on the incident page: what faultgraph decided about the incident's hosts
// (drain, resume; dry run, done, failed, capped) with each actuator's outcome.
// Reads GET /v1/remediation?incident=; marks <body data-remediation-ready> when drawn.
"use strict";

async function drawRemediation() {
  const box = document.getElementById("remediation");
  const id = new URLSearchParams(location.search).get("id");
  if (!box || !id) return;
  try {
    const { actions } = await api(`/v1/remediation?incident=${encodeURIComponent(id)}`);
    if (!actions.length) {
      box.replaceChildren(el("p", { class: "muted", text: "No remediation for this incident (off unless enabled)." }));
      return;
    }
    box.replaceChildren(el("table", { class: "list compact", id: "remediation-table" },
      el("thead", {}, el("tr", {}, ...["time", "action", "host", "outcome", "detail"].map((h) => el("th", { text: h })))),
      el("tbody", {}, actions.map((a) => el("tr", { "data-outcome": a.outcome },
        el("td", { text: fmtTime(a.time) }), el("td", { text: a.action }), el("td", { class: "mono", text: a.host }),
        el("td", { text: a.outcome.replace("_", " ") }),
        el("td", { class: "message", text: [a.note, ...(a.results || []).map((r) => `${r.actuator}: ${r.detail || r.outcome}`)]
          .filter(Boolean).join("; ") || a.reason }))))));
  } catch (error) {
    notAvailable(box, "Remediation", error);
  }
}

drawRemediation().finally(() => { document.body.dataset.remediationReady = "true"; });
