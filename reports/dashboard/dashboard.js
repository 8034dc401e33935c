// rdmaconf dashboard: renders the data block that `rdmaconf report html`
// writes into the page (reports/dashboard.cpp). Plain script, no network,
// works from file://. Everything is drawn from strings in one pass per
// section so that 10 000 cells stay quick.
"use strict";
(function () {
  const t0 = performance.now();
  const D = JSON.parse(document.getElementById("data").textContent);
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s == null ? "" : s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
  // What a report gives is shown only as what it should be: a number as a
  // number ("?" otherwise), a class name only from the verdicts the page
  // draws, a key looked up only among an object's own properties (a key
  // "__proto__" or "constructor" finds nothing).
  const num = (x) => (typeof x === "number" && Number.isFinite(x) ? String(x) : "?");
  const own = (o, k) => (o != null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k) ? o[k] : undefined);
  const arr = (x) => (Array.isArray(x) ? x : []);
  const obj = (x) => (x != null && typeof x === "object" && !Array.isArray(x) ? x : {});
  const CLASSES = new Set(["green", "red", "skipped", "PASS", "FAIL", "INCONCLUSIVE", "NOT_APPLICABLE", "absent"]);
  const cls = (v) => (CLASSES.has(v) ? v : "unknown");
  const VERDICTS = ["PASS", "FAIL", "INCONCLUSIVE", "NOT_APPLICABLE"];
  const asCheck = { green: "PASS", red: "FAIL", skipped: "NOT_APPLICABLE" };
  const state = { q: "", family: "", level: "", verdict: "", peer: "", run: "" };
  const RUNS = D.history_runs || [];
  const runName = (i) => { const r = RUNS[i] || {}; return `${r.run || "run " + i}${r.date ? " · " + r.date : ""}${r.commit ? " · " + String(r.commit).slice(0, 12) : ""}`; };
  const LETTER = { g: "green", r: "red", i: "INCONCLUSIVE", s: "skipped", "-": "" };

  // History: one letter a run, oldest first (g pass/green, r fail/red, i inconclusive, s skipped or n/a, - absent).
  const SPARK = { g: "#43a047", r: "#e53935", i: "#fbc02d", s: "#b0bec5", "-": "#eceff1" };
  function spark(h) {
    if (!h) return "";
    let x = 0, r = "";
    let i = 0;
    for (const c of h) {
      r += `<rect x="${x}" y="0" width="3" height="12" fill="${SPARK[c] || SPARK["-"]}"><title>${esc(runName(i))}: ${esc(LETTER[c] || "absent")}</title></rect>`;
      x += 4; i++;
    }
    return `<svg class="spark" width="${x}" height="12" aria-label="history">${r}</svg>`;
  }
  // "failing since" and "flaky", from the history (reports/dashboard.cpp history_marks).
  function marks(m) {
    if (!m) return "";
    let h = "";
    if (m.since >= 0) h += ` <span class="since" data-since="${m.since}" title="red or inconclusive in every run since">failing since ${esc(runName(m.since))}</span>`;
    if (m.flaky) h += ` <span class="flaky" title="its verdict moved between good and bad twice or more over these runs">flaky</span>`;
    return h;
  }
  function requirement(id) {
    const c = own(D.catalog, id);
    return c ? `${esc(c.spec)} ${esc(c.section)} ${esc(c.level)}: ${esc(c.requirement)}` : "";
  }
  // A link the page's writer made relative to the page (or to --link-base):
  // an absolute path becomes a file:// link, an http(s) or file URL stays,
  // and anything else is a path relative to the page, never a scheme of its
  // own (a folder named "javascript:..." is a folder).
  function fileLink(href, label) {
    if (typeof href !== "string" || !href) return "";
    let url;
    if (href.startsWith("/")) url = "file://" + encodeURI(href);
    else if (/^(https?|file):\/\//i.test(href)) url = href;
    else url = (/^[^/?#]*:/.test(href) ? "./" : "") + encodeURI(href);
    return `<a href="${esc(url)}">${esc(label || href)}</a>`;
  }

  // ---------------------------------------------------------------- trend
  // Totals per run of the history, as stacked bars: FAIL or red, INCONCLUSIVE, PASS or green.
  function trend() {
    const sec = $("trend"), T = D.history_totals || [];
    if (!T.length) { sec.classList.add("hidden"); return; }
    const parts = [["bad", ["FAIL", "red"], "#e53935"], ["inconclusive", ["INCONCLUSIVE"], "#fbc02d"], ["good", ["PASS", "green"], "#43a047"]];
    const sums = T.map((t) => parts.map(([, keys]) => keys.reduce((a, k) => a + (t[k] || 0), 0)));
    const max = Math.max(1, ...sums.map((p) => p[0] + p[1] + p[2]));
    const W = 18, H = 80;
    let svg = "";
    sums.forEach((p, i) => {
      let y = H;
      p.forEach((n, k) => {
        const h = Math.round((n / max) * H);
        y -= h;
        if (h) svg += `<rect class="bar-${parts[k][0]}" x="${i * W}" y="${y}" width="${W - 4}" height="${h}" fill="${parts[k][2]}"/>`;
      });
      svg += `<rect x="${i * W}" y="0" width="${W - 4}" height="${H}" fill="transparent" data-run="${i}"><title>${esc(runName(i))}: ${p[0]} FAIL or red, ${p[1]} INCONCLUSIVE, ${p[2]} PASS or green</title></rect>`;
    });
    $("trend-chart").innerHTML = `<svg width="${sums.length * W}" height="${H}" aria-label="totals per run">${svg}</svg>`;
    $("trend-note").textContent = `${sums.length} run(s), oldest first; the last: ${runName(sums.length - 1)}`;
  }

  // ---------------------------------------------------------------- header
  function header() {
    const s = [];
    if (D.summary.lab) { const l = D.summary.lab; s.push(`lab: ${l.cells} cells, ${l.green} green, ${l.red} red, ${l.skipped} skipped` + (l.flaky ? `, ${l.flaky} red only on a first attempt` : "")); }
    if (D.summary.check) { const c = D.summary.check; s.push(`captures: ${c.inputs} inputs, ${c.pass} PASS, ${c.fail} FAIL, ${c.inconclusive} INCONCLUSIVE`); }
    $("meta").textContent = `${D.generated} · ${D.tools.join(", ")} · ${s.join(" · ")}`;
    const r = $("regressions");
    if (D.baseline == null) { r.classList.add("none"); r.innerHTML = `<h2>Regressions</h2><span class="muted">no baseline given</span>`; return; }
    if (!D.regressions.length) { r.classList.add("none"); r.innerHTML = `<h2>No regression</h2><span class="muted">against ${esc(D.baseline)}</span>`; return; }
    // Grouped: a check report's by input, then by case, the FAILs first; the lab's cells as they are. Each row opens its evidence.
    const inputAt = new Map(D.inputs.map((x, i) => [x.key, i])), cellAt = new Map(D.lab.map((c, i) => [c.id, i]));
    const groups = new Map();
    for (const g of D.regressions) {
      const p = g.item.split(" ");
      const isCheck = p.length >= 3;
      const input = isCheck ? p.slice(0, -2).join(" ") : "lab cells", kase = isCheck ? p[p.length - 1] : g.item;
      if (!groups.has(input)) groups.set(input, { input, isCheck, fails: 0, cases: new Map() });
      const gr = groups.get(input);
      gr.fails += g.after === "FAIL" || g.after === "red";
      if (!gr.cases.has(kase)) gr.cases.set(kase, { kase, scopes: [], before: new Set(), after: new Set() });
      const c = gr.cases.get(kase);
      c.scopes.push(isCheck ? p[p.length - 2] : g.item); c.before.add(g.before); c.after.add(g.after);
    }
    const bad = (c) => c.after.has("FAIL") || c.after.has("red") ? 0 : 1;
    const more = Number(D.regressions_left_out) || 0;
    let h = `<h2>${num(D.regressions.length + more)} regression(s) against ${esc(D.baseline)}</h2>` +
      (more ? `<p class="muted" id="regressions-left-out">${num(more)} of them not drawn on this page (it draws the first ${num(D.regressions.length)}): run <code>rdmaconf report diff</code> for all.</p>` : "") + `<table><tr><th>input and case</th><th>before</th><th>now</th></tr>`;
    let rows = 0;
    for (const gr of [...groups.values()].sort((a, b) => (b.fails > 0) - (a.fails > 0) || a.input.localeCompare(b.input))) {
      const n = [...gr.cases.values()].reduce((a, c) => a + c.scopes.length, 0);
      const link = gr.isCheck && inputAt.has(gr.input) ? ` data-input="${inputAt.get(gr.input)}"` : "";
      if (gr.isCheck) h += `<tr class="regression-group"><td colspan="3"><a href="#"${link}>${esc(gr.input)}</a>: ${n} regression(s), ${gr.fails} to FAIL</td></tr>`;
      for (const c of [...gr.cases.values()].sort((a, b) => bad(a) - bad(b) || a.kase.localeCompare(b.kase))) {
        if (rows++ >= 500) break;
        const open = gr.isCheck ? link : cellAt.has(c.kase) ? ` data-cell="${cellAt.get(c.kase)}"` : "";
        const what = gr.isCheck ? `<code>${esc(c.kase)}</code> in ${c.scopes.length} scope(s): ${esc(c.scopes.slice(0, 3).join(", "))}${c.scopes.length > 3 ? ", ..." : ""}` : `<code>${esc(c.kase)}</code>`;
        h += `<tr class="regression-row${bad(c) ? "" : " root"}"${open}><td>${what}</td><td>${esc([...c.before].join(", "))}</td><td>${esc([...c.after].join(", "))}</td></tr>`;
      }
    }
    if (rows > 500) h += `<tr><td colspan="3">and more: see report diff</td></tr>`;
    r.innerHTML = h + "</table>";
  }

  // ---------------------------------------------------------------- filters
  function filters() {
    const opts = (sel, values) => { for (const v of values) sel.insertAdjacentHTML("beforeend", `<option value="${esc(v)}">${esc(v)}</option>`); };
    const fams = new Set(), peers = new Set(), levels = new Set();
    for (const c of D.lab) { fams.add(c.family); peers.add(c.peer); }
    for (const f of D.families) fams.add(f.split(".")[0]);
    for (const id in D.catalog) levels.add(D.catalog[id].level);
    opts($("f-family"), [...fams].sort());
    opts($("f-peer"), [...peers].sort());
    opts($("f-level"), [...levels].sort());
    opts($("f-verdict"), ["green", "red", "skipped", ...VERDICTS]);
    const runSel = $("f-run");
    if (!RUNS.length) runSel.parentElement.classList.add("hidden");
    RUNS.forEach((r, i) => runSel.insertAdjacentHTML("beforeend", `<option value="${i}">${esc(runName(i))}</option>`));
    const on = (id, key) => $(id).addEventListener(id === "q" ? "input" : "change", (e) => { state[key] = e.target.value; render(); });
    on("q", "q"); on("f-family", "family"); on("f-level", "level"); on("f-verdict", "verdict"); on("f-peer", "peer"); on("f-run", "run");
  }
  const wantVerdict = (v) => !state.verdict || v === state.verdict || asCheck[v] === state.verdict || asCheck[state.verdict] === v;
  const matches = (...texts) => !state.q || texts.some((t) => String(t || "").toLowerCase().includes(state.q.toLowerCase()));

  // ---------------------------------------------------------------- lab
  // A cell's verdict as shown: the report's, or with a run picked, the history's of that run.
  const shownVerdict = (c) => state.run === "" ? c.verdict : (LETTER[(c.hist || "")[+state.run] || "-"] || "absent");
  function labVisible(c) {
    if (state.family && c.family !== state.family) return false;
    if (state.peer && c.peer !== state.peer) return false;
    if (!wantVerdict(shownVerdict(c))) return false;
    if (state.level && arr(c.failed).length && !arr(c.failed).some((f) => (own(D.catalog, f) || {}).level === state.level)) return false;
    return matches(c.id, c.reason, c.program, c.scenario, c.config, c.finding, c.device);
  }
  function lab() {
    const sec = $("lab");
    if (!D.lab.length) { sec.classList.add("hidden"); return; }
    const roles = ["initiator", "responder", "none"];
    const rows = new Map();
    const n = { green: 0, red: 0, skipped: 0 };
    for (let i = 0; i < D.lab.length; i++) {
      const c = D.lab[i];
      if (!labVisible(c)) continue;
      const v = shownVerdict(c);
      n[v] = (n[v] || 0) + 1;
      const key = `${c.device}\u0000${c.program}\u0000${c.scenario}`;
      let r = rows.get(key);
      if (!r) { r = { device: c.device, program: c.program, scenario: c.scenario, by: { initiator: [], responder: [], none: [] }, g: 0, red: 0 }; rows.set(key, r); }
      (own(r.by, c.role) || r.by.none).push(i);
      if (v === "green") r.g++; else if (v === "red") r.red++;
    }
    let h = `<tr><th>device</th><th>peer's program</th><th>scenario</th>${roles.map((x) => `<th>our engine: ${x === "none" ? "not in it" : x}</th>`).join("")}<th>green / red</th></tr>`;
    for (const r of [...rows.values()].sort((a, b) => (a.device + a.scenario + a.program).localeCompare(b.device + b.scenario + b.program))) {
      h += `<tr><td>${esc(r.device)}</td><td>${esc(r.program)}</td><td>${esc(r.scenario)}</td>`;
      for (const role of roles)
        h += "<td>" + r.by[role].map((i) => { const c = D.lab[i]; return `<span class="sq ${cls(shownVerdict(c))}${c.regression && state.run === "" ? " regression" : ""}${c.marks && c.marks.flaky ? " flaky" : ""}" data-cell="${i}" title="${esc(c.id)}"></span>`; }).join("") + "</td>";
      h += `<td class="cnt">${r.g} / ${r.red}</td></tr>`;
    }
    $("lab-table").innerHTML = h;
    const shown = n.green + n.red + n.skipped;
    $("lab-counts").innerHTML = `<span data-n="${shown}">${shown}</span> cells: <span data-green="${n.green}">${n.green}</span> green, <span data-red="${n.red}">${n.red}</span> red, <span data-skipped="${n.skipped}">${n.skipped}</span> skipped`;
  }
  function labDetail(c) {
    let h = `<h2><span class="sq ${cls(c.verdict)}"></span> ${esc(c.id)}</h2>`;
    h += `<p>${spark(c.hist)}${marks(c.marks)}</p><p><b>${esc(c.verdict)}</b>${c.regression ? " <b>(regression)</b>" : ""}: ${esc(c.reason)}</p>`;
    h += `<table><tr><td>device</td><td>${esc(c.device)}</td></tr><tr><td>peer's program</td><td>${esc(c.program)}</td></tr><tr><td>our engine</td><td>${esc(c.role)}, ${esc(c.scenario)}</td></tr>`;
    h += `<tr><td>configuration</td><td>${esc(c.config)}</td></tr><tr><td>check</td><td>${num(obj(c.check).pass)} pass, ${num(obj(c.check).fail)} fail, ${num(obj(c.check).inconclusive)} inconclusive</td></tr>`;
    if (c.finding) h += `<tr><td>known finding</td><td>${esc(c.finding)}</td></tr>`;
    h += `<tr><td>capture</td><td>${fileLink(c.capture_href, c.capture)}</td></tr><tr><td>check report</td><td>${fileLink(c.check_report_href, c.check_report)}</td></tr></table>`;
    if (arr(c.failed).length) {
      h += "<h3>Cases that FAIL</h3>";
      for (const f of arr(c.failed)) h += `<div class="ev"><code>${esc(f)}</code><br>${requirement(f)}</div>`;
    }
    return h;
  }

  // ---------------------------------------------------------------- captures
  const famOf = (id) => id.split(".").slice(0, 2).join(".");
  function caseVisible(id) {
    const c = own(D.catalog, id) || {};
    if (state.family && id.split(".")[0] !== state.family && c.family !== state.family) return false;
    if (state.level && c.level !== state.level) return false;
    return true;
  }
  function inputs() {
    const sec = $("captures");
    if (!D.inputs.length) { sec.classList.add("hidden"); return; }
    const fams = D.families.filter((f) => !state.family || f.split(".")[0] === state.family);
    // Two header rows: the family over its groups of cases (the case ID's second word).
    const spans = [];
    for (const f of fams) { const top = f.split(".")[0]; if (spans.length && spans[spans.length - 1][0] === top) spans[spans.length - 1][1]++; else spans.push([top, 1]); }
    let h = `<tr><th rowspan="2">capture</th><th rowspan="2">history</th>${spans.map(([t, n]) => `<th colspan="${n}" class="famhead">${esc(t)}</th>`).join("")}</tr>`;
    h += `<tr>${fams.map((f) => `<th class="famcol" title="${esc(f)}">${esc(f.split(".")[1])}</th>`).join("")}</tr>`;
    const total = { PASS: 0, FAIL: 0, INCONCLUSIVE: 0, NOT_APPLICABLE: 0 };
    let rowsShown = 0;
    for (let i = 0; i < D.inputs.length; i++) {
      const x = D.inputs[i];
      const per = new Map();
      let any = false;
      const sums = { PASS: 0, FAIL: 0, INCONCLUSIVE: 0, NOT_APPLICABLE: 0 };
      for (const id in x.res) {
        if (!caseVisible(id)) continue;
        const f = famOf(id), v = x.res[id];
        if (!per.has(f)) per.set(f, [0, 0, 0, 0]);
        const p = per.get(f);
        for (let k = 0; k < 4; k++) { const n = Number(arr(v)[k]) || 0; p[k] += n; sums[VERDICTS[k]] += n; }
      }
      if (state.verdict) any = sums[asCheck[state.verdict] || state.verdict] > 0; else any = true;
      if (!any && !(x.error && (!state.verdict || state.verdict === "FAIL" || state.verdict === "red"))) continue;
      if (!matches(x.key, x.error, ...Object.keys(x.res).filter((id) => x.res[id][1] || x.res[id][2]))) continue;
      rowsShown++;
      for (const k of VERDICTS) total[k] += sums[k];
      const then = state.run === "" ? "" : `<span class="sq ${LETTER[(x.hist || "")[+state.run] || "-"] || "absent"}" title="${esc(runName(+state.run))}"></span> `;
      h += `<tr><td>${then}<a href="#" data-input="${i}">${esc(x.key)}</a>${marks(x.marks)}${x.error ? ` <b class="muted">${esc(x.error)}</b>` : ""}</td><td>${spark(x.hist)}</td>`;
      for (const f of fams) {
        const p = per.get(f);
        if (!p) { h += "<td></td>"; continue; }
        const worst = p[1] ? "FAIL" : p[2] ? "INCONCLUSIVE" : p[0] ? "PASS" : "NOT_APPLICABLE";
        const label = p[1] ? p[1] : p[2] ? p[2] : "";
        h += `<td><span class="fam ${worst}" data-input="${i}" data-fam="${esc(f)}" title="${esc(f)}: pass ${p[0]}, fail ${p[1]}, inconclusive ${p[2]}, n/a ${p[3]}">${label}</span></td>`;
      }
      h += "</tr>";
    }
    $("input-table").innerHTML = h;
    $("input-counts").innerHTML = `<span data-n="${rowsShown}">${rowsShown}</span> inputs; results: <span data-pass="${total.PASS}">${total.PASS}</span> PASS, <span data-fail="${total.FAIL}">${total.FAIL}</span> FAIL, <span data-inconclusive="${total.INCONCLUSIVE}">${total.INCONCLUSIVE}</span> INCONCLUSIVE, ${total.NOT_APPLICABLE} NOT_APPLICABLE (a box: the worst verdict of that group of cases in that capture, with the count of FAIL or INCONCLUSIVE results; hover for all counts)`;
    const L = obj(D.inputs_left_out), B = obj(L.budget);
    if (Number(L.inputs) > 0 || Number(L.problems) > 0) {
      let note = `<p class="muted" id="inputs-left-out">This page draws at most ${num(B.inputs)} inputs (those with a FAIL, an INCONCLUSIVE or an error first) and ${num(B.problems)} FAIL or INCONCLUSIVE results with their evidence (${num(B.problems_per_input)} an input).`;
      if (Number(L.inputs) > 0) note += ` Not drawn: <span data-left-inputs="${num(L.inputs)}">${num(L.inputs)}</span> inputs (${num(L.with_problems)} of them with problems), holding ${num(L.pass)} PASS, ${num(L.fail)} FAIL, ${num(L.inconclusive)} INCONCLUSIVE and ${num(L.not_applicable)} NOT_APPLICABLE results.`;
      if (Number(L.problems) > 0) note += ` <span data-left-problems="${num(L.problems)}">${num(L.problems)}</span> FAIL or INCONCLUSIVE results are counted but not shown.`;
      $("input-counts").innerHTML += note + " The JSON report holds them all.</p>";
    }
  }
  function inputDetail(x, fam) {
    let h = `<h2>${esc(x.key)}</h2><p>${spark(x.hist)}${marks(x.marks)}</p><table>`;
    h += `<tr><td>capture</td><td>${fileLink(x.href, x.path)}</td></tr>`;
    if (x.manifest) h += `<tr><td>manifest</td><td>${fileLink(x.manifest_href, x.manifest)}</td></tr>`;
    h += `<tr><td>sha256</td><td><code>${esc(x.sha256)}</code></td></tr></table>`;
    if (x.error) h += `<p><b>${esc(x.error)}</b></p>`;
    const probs = x.problems.filter((p) => (!fam || famOf(p.case) === fam) && caseVisible(p.case));
    h += `<h3>${fam ? esc(fam) + ": " : ""}${probs.length ? "what FAILs or is INCONCLUSIVE" : "nothing FAILs or is INCONCLUSIVE"}</h3>`;
    for (const p of probs) {
      h += `<div class="ev ${cls(p.verdict)}"><b>${esc(p.verdict)}</b> <code>${esc(p.case)}</code> in ${esc(p.scope)} (${num(p.failed)} failed, ${num(p.inconclusive)} inconclusive)<br>${requirement(p.case)}`;
      for (const e of arr(p.evidence).map(obj)) {
        h += `<br>frames ${esc(arr(e.frames).join(", "))}${e.stream_offset != null ? `, stream offset ${num(e.stream_offset)}` : ""}${e.side ? `, ${esc(e.side)}` : ""}`;
        if (e.expected || e.actual) h += `: expected ${esc(e.expected)}, got ${esc(e.actual)}`;
        if (e.detail) h += ` <span class="muted">(${esc(e.detail)})</span>`;
        if (e.caused_by) h += ` <span class="muted">[consequence of <code>${esc(obj(e.caused_by).case)}</code> at frame ${esc(obj(e.caused_by).frame)}]</span>`;
      }
      h += "</div>";
    }
    if (x.problems_left_out) h += `<p class="muted">${num(x.problems_left_out)} more results left out of this page: see the JSON report.</p>`;
    return h;
  }

  // ---------------------------------------------------------------- coverage and findings
  function coverage() {
    const C = D.coverage, sec = $("coverage");
    if (!C) { sec.classList.add("hidden"); return; }
    const S = obj(C.statements), T = obj(C.totals), L = obj(C.lacking);
    const K = ["statements", "judged", "partly", "provoked", "provoked_in_lab", "exception", "permitted", "todo"];
    let h = `<p id="coverage-totals">${num(obj(S.totals).statements)} normative statements in the ledgers; ${num(T.cases)} cases over ` +
      `${num(T.captures)} captures and ${num(T.cells)} lab cells.</p>`;
    h += `<table id="coverage-statements"><tr><th>specification</th><th>class</th>${K.map(k => `<th>${esc(k.replace(/_/g, " "))}</th>`).join("")}` +
      `<th>judged score</th></tr>`;
    for (const s of arr(S.by_spec).map(obj))
      for (const [kind, c] of Object.entries(obj(s.classes)).map(([k, v]) => [k, obj(v)])) {
        if (!c.statements || !matches(s.spec, kind)) continue;
        h += `<tr><td>${esc(s.spec)}</td><td>${esc(kind)}</td>${K.map(k => `<td>${num(c[k])}</td>`).join("")}<td>${num(c.judged_score)} %</td></tr>`;
      }
    h += "</table>";
    for (const [k, what] of [["a_fail_capture", "no capture FAILs them"], ["a_live_cell", "no live cell runs them"], ["a_live_cell_that_fails_it", "no live cell FAILs them"]])
      if (arr(own(L, k)).length) h += `<details><summary>${arr(own(L, k)).length} case(s): ${what}</summary>${arr(own(L, k)).map(esc).join("<br>")}</details>`;
    h += `<table><tr><th>case</th><th>statements</th><th>golden PASS / FAIL</th><th>lab captures / FAIL</th><th>live cells / FAIL</th></tr>`;
    for (const c of arr(C.cases).map(obj)) {
      if (!matches(c.cites, c.id, arr(c.statements).join(" ")) || !caseVisible(c.id)) continue;
      h += `<tr><td><code>${esc(c.id)}</code> ${esc(c.level)}<br>${esc(c.cites)}</td><td>${arr(c.statements).map(esc).join(" ")}</td>` +
        `<td>${num(c.golden_pass)} / ${num(c.golden_fail)}</td><td>${num(c.lab_captures)} / ${num(c.lab_captures_fail)}</td><td>${num(c.live_cells)} / ${arr(c.live_cells_fail).length}</td></tr>`;
    }
    $("coverage-table").innerHTML = h + "</table>";
  }
  function findings() {
    const sec = $("findings");
    if (!D.findings.length) { sec.classList.add("hidden"); return; }
    let h = `<tr><th>finding</th><th>device</th><th>kernels</th><th>cases</th><th>cells</th><th>source</th></tr>`;
    // A citation: a note as it is, or its file, function and lines on each kernel.
    const cite = (s) => {
      if (typeof s === "string") return esc(s);
      const c = obj(s), lines = obj(own(c, "lines"));
      const where = Object.keys(lines).map((k) => `${esc(k)}: ${esc(lines[k])}`).join(", ");
      return `<code>${esc(own(c, "file"))}</code>${own(c, "function") ? ` <code>${esc(own(c, "function"))}()</code>` : ""} (${where}): ${esc(own(c, "what"))}`;
    };
    for (const f of D.findings) {
      if (!matches(f.name, f.title, f.text)) continue;
      const kernels = arr(f.kernels).map((k) => `${esc(own(obj(k), "kernel_file") || own(obj(k), "kernel"))}: ${esc(own(obj(k), "status"))}`).join("<br>");
      h += `<tr><td>${f.severity === "security" ? "<b>[security]</b> " : ""}<b>${esc(f.title)}</b><br><span class="muted">${esc(f.text)}</span></td><td>${esc(f.device_label)}</td><td>${kernels}</td>`;
      h += `<td>${arr(f.cases).map((c) => `<code>${esc(c)}</code>`).join("<br>")}</td><td>${arr(f.cells).length}</td><td>${arr(f.source).map(cite).join("<br>")}</td></tr>`;
    }
    $("findings-table").innerHTML = h;
  }

  // ---------------------------------------------------------------- detail panel
  document.addEventListener("click", (e) => {
    const t = e.target.closest("[data-cell],[data-input],.close");
    if (!t) return;
    e.preventDefault();
    const d = $("detail");
    if (t.classList.contains("close")) { d.classList.add("hidden"); return; }
    const body = t.dataset.cell != null ? labDetail(D.lab[+t.dataset.cell]) : inputDetail(D.inputs[+t.dataset.input], t.dataset.fam);
    d.innerHTML = `<span class="close" title="close">✕</span>` + body;
    d.classList.remove("hidden");
  });

  function render() { lab(); inputs(); coverage(); findings(); }
  header();
  trend();
  filters();
  render();
  window.renderMs = performance.now() - t0;
  document.body.dataset.rendered = "yes";
})();
