// Diagnose: paste or drop log files, POST them to /v1/diagnose, show the ranked answer
// with the lines that decided each incident highlighted among their neighbours.
"use strict";

const CONTEXT = 2;  // lines shown around each quoted line

function pastedLines() {
  const text = document.getElementById("paste").value;
  const lines = text.split("\n");
  if (lines.length && lines[lines.length - 1] === "") lines.pop();
  return lines;
}

async function readFiles(files) {
  const texts = await Promise.all([...files].map((file) => file.text()));
  const area = document.getElementById("paste");
  const joined = texts.map((t) => (t.endsWith("\n") ? t : `${t}\n`)).join("");
  area.value = area.value && !area.value.endsWith("\n") ? `${area.value}\n${joined}` : area.value + joined;
}

// The pasted lines around the quoted ones, the quoted ones marked.
function excerpt(lines, quoted) {
  const cited = new Set(quoted.map((q) => q.line));
  const shown = new Set();
  for (const n of cited) {
    for (let k = Math.max(1, n - CONTEXT); k <= Math.min(lines.length, n + CONTEXT); k++) shown.add(k);
  }
  const pre = el("pre", { class: "excerpt" });
  let previous = 0;
  for (const n of [...shown].sort((a, b) => a - b)) {
    if (previous && n > previous + 1) pre.append(el("span", { class: "gap", text: "…\n" }));
    const row = el(cited.has(n) ? "mark" : "span", { class: cited.has(n) ? "cited" : "context", "data-line": n },
      el("span", { class: "line-no", text: String(n).padStart(6) }), ` ${lines[n - 1]}\n`);
    pre.append(row);
    previous = n;
  }
  return pre;
}

function incidentCard(incident, rank, lines) {
  const root = incident.root_cause;
  return el("article", { class: "card diagnosis", "data-rank": rank },
    el("h2", {}, `${rank}. `, categoryChip(root.category), ` ${root.cause.replaceAll("_", " ")} at `,
      root.component ? el("span", { class: "place", text: root.component })
        : el("span", { class: "place unnamed", text: "an unnamed host" })),
    el("p", { class: "muted", text: `confidence ${fmtNumber(root.confidence, 2)} · rule ${root.rule}` }),
    el("p", { class: "explanation", text: root.explanation }),
    el("div", { class: `action ${incident.action.kind}` },
      el("span", { class: "value", text: `${incident.action.kind} ${incident.action.target ?? ""}` }),
      el("div", { text: incident.action.detail })),
    el("h3", { text: "The lines that decided it" }),
    excerpt(lines, incident.lines),
    incident.missing.length ? el("h3", { text: "Missing from the paste" }) : null,
    incident.missing.length ? el("ul", { class: "missing" }, incident.missing.map((m) => el("li", { text: m }))) : null);
}

async function run() {
  const status = document.getElementById("status");
  const answer = document.getElementById("answer");
  const lines = pastedLines();
  if (!lines.length) { status.textContent = "Nothing pasted yet."; return; }
  const host = document.getElementById("host").value.trim();
  status.textContent = `Diagnosing ${lines.length} lines…`;
  try {
    const result = await api("/v1/diagnose", { method: "POST", body: JSON.stringify({ lines, ...(host ? { host } : {}) }) });
    status.textContent = `${result.lines} lines, ${result.events} events, ${result.unmatched} matched no rule`;
    answer.replaceChildren(...(result.incidents.length
      ? result.incidents.map((incident, i) => incidentCard(incident, i + 1, lines))
      : [el("p", { class: "none", text: "No diagnosis: nothing in these lines names a failure. Add the job's error output, the hosts' dmesg, or a py-spy dump of every rank." })]));
  } catch (error) {
    status.textContent = "";
    notAvailable(answer, "Diagnosis", error);
  } finally {
    document.body.dataset.done = "true";
  }
}

function main() {
  header("diagnose");
  const zone = document.getElementById("paste-zone");
  zone.addEventListener("dragover", (event) => { event.preventDefault(); zone.classList.add("over"); });
  zone.addEventListener("dragleave", () => zone.classList.remove("over"));
  zone.addEventListener("drop", async (event) => {
    event.preventDefault();
    zone.classList.remove("over");
    await readFiles(event.dataTransfer.files);
  });
  document.getElementById("files").addEventListener("change", (event) => readFiles(event.target.files));
  document.getElementById("run").addEventListener("click", () => {
    document.body.dataset.done = "false";
    run();
  });
}

main();
document.body.dataset.ready = "true";
