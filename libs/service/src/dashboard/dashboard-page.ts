/**
 * The dashboard's HTML and CSS, embedded as strings so `tsc` emits them into dist with the rest of
 * the service (the build has no asset copy step). The page holds no data: everything it shows is
 * read by dashboard-script from `api/v1/progress`, relative to the page, so it also works behind a
 * path prefix. No inline script or style: the page is served with a strict Content-Security-Policy.
 */

export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>cluster-sync</title>
<link rel="icon" href="dashboard/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="dashboard/dashboard.css">
</head>
<body>
<header>
  <h1>cluster-sync <span id="role" class="muted"></span></h1>
  <div id="identity" class="muted"></div>
  <div id="connection" class="conn" data-ok="unknown">connecting…</div>
</header>
<div id="alert" class="alert" hidden></div>
<main>
  <section class="cards">
    <div class="card"><div class="label">State</div><div id="state" class="state" data-state="">—</div><div id="info" class="sub"></div></div>
    <div class="card wide">
      <div class="label">Collection copy</div>
      <div class="bar big"><div id="copy-bar" class="fill"></div><span id="copy-percent" class="bar-text">—</span></div>
      <div id="copy-bytes" class="sub"></div>
    </div>
    <div class="card"><div class="label">Lag</div><div id="lag" class="value">—</div><div class="sub">seconds behind the source</div></div>
    <div class="card"><div class="label">Events applied</div><div id="events" class="value">—</div><div id="namespaces" class="sub"></div></div>
    <div class="card"><div class="label">Commit</div><div id="can-commit" class="value">—</div><div id="can-write" class="sub"></div></div>
  </section>
  <section class="row">
    <div class="panel chart-panel">
      <h2>Lag, last 5 minutes <span id="lag-max" class="muted"></span></h2>
      <svg id="lag-chart" viewBox="0 0 600 160" preserveAspectRatio="none" role="img" aria-label="lag over the last five minutes"></svg>
      <div class="axis"><span>−5 min</span><span>−2.5 min</span><span>now</span></div>
    </div>
    <div class="panel actions">
      <h2>Commands</h2>
      <div class="buttons">
        <button type="button" data-op="pause">Pause</button>
        <button type="button" data-op="resume">Resume</button>
        <button type="button" data-op="commit">Commit…</button>
        <button type="button" data-op="reverse">Reverse…</button>
      </div>
      <div id="answer" class="answer" data-kind="none" role="status" aria-live="polite">No command sent yet.</div>
    </div>
  </section>
  <section id="verification" class="panel" hidden>
    <h2>Verification <span id="verify-phase" class="pill"></span></h2>
    <div class="bar"><div id="verify-bar" class="fill verify"></div><span id="verify-text" class="bar-text"></span></div>
    <div id="verify-figures" class="sub"></div>
    <ul id="verify-samples" class="samples"></ul>
  </section>
  <section class="panel">
    <h2 id="detail-title">Namespaces</h2>
    <div class="table-wrap">
      <table>
        <thead id="detail-head"></thead>
        <tbody id="detail-body"></tbody>
      </table>
    </div>
    <div id="detail-note" class="sub"></div>
  </section>
</main>
<script src="dashboard/dashboard.js"></script>
</body>
</html>
`;

export const DASHBOARD_CSS = `
:root { --bg: #f4f6f8; --card: #fff; --ink: #1d2733; --muted: #6b7785; --line: #dde3ea;
  --ok: #1f8a4c; --bad: #c0392b; --warn: #b9770e; --accent: #2f6fdf; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif;
  background: var(--bg); color: var(--ink); }
header { display: flex; align-items: baseline; gap: 16px; padding: 10px 20px;
  background: #1d2733; color: #fff; }
header h1 { font-size: 18px; margin: 0; font-weight: 600; }
header .muted { color: #aab6c4; }
#identity { flex: 1; font-size: 13px; }
.conn { font-size: 12px; padding: 2px 8px; border-radius: 10px; background: #46525f; }
.conn[data-ok="true"] { background: var(--ok); }
.conn[data-ok="false"] { background: var(--bad); }
main { padding: 12px 20px; display: flex; flex-direction: column; gap: 12px; }
.muted { color: var(--muted); font-weight: normal; }
.alert { margin: 12px 20px 0; padding: 8px 12px; border-radius: 6px; background: #fdecea;
  color: var(--bad); border: 1px solid #f5c6c0; white-space: pre-wrap; }
.cards { display: grid; grid-template-columns: 1.1fr 2.2fr 1fr 1fr 1fr; gap: 12px; }
.card, .panel { background: var(--card); border: 1px solid var(--line); border-radius: 8px; padding: 10px 14px; }
.label { font-size: 12px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); }
.value { font-size: 24px; font-weight: 600; margin-top: 2px; }
.sub { font-size: 12px; color: var(--muted); margin-top: 4px; }
.state { font-size: 22px; font-weight: 700; margin-top: 2px; }
.state[data-state="RUNNING"] { color: var(--accent); }
.state[data-state="PAUSED"] { color: var(--warn); }
.state[data-state="COMMITTING"], .state[data-state="REVERSING"] { color: #7d3c98; }
.state[data-state="COMMITTED"] { color: var(--ok); }
.bar { position: relative; height: 18px; background: #e8edf2; border-radius: 9px; overflow: hidden; }
.bar.big { height: 28px; border-radius: 6px; margin-top: 6px; }
.bar .fill { height: 100%; width: 0; background: var(--accent); }
.bar .fill.done { background: var(--ok); }
.bar .fill.verify { background: #16a085; }
.bar .fill.failed { background: var(--bad); }
.bar-text { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center;
  font-size: 12px; font-weight: 600; color: var(--ink); }
.bar.big .bar-text { font-size: 15px; }
.row { display: grid; grid-template-columns: 2fr 1fr; gap: 12px; }
h2 { font-size: 14px; margin: 0 0 8px; }
#lag-chart { width: 100%; height: 160px; display: block; background: #fafbfc; border: 1px solid var(--line); border-radius: 4px; }
#lag-chart .grid { stroke: #e3e8ee; stroke-width: 1; vector-effect: non-scaling-stroke; }
#lag-chart .line { fill: none; stroke: var(--accent); stroke-width: 2; vector-effect: non-scaling-stroke; }
#lag-chart .tick { font-size: 10px; fill: var(--muted); }
.axis { display: flex; justify-content: space-between; font-size: 11px; color: var(--muted); }
.buttons { display: grid; grid-template-columns: 1fr 1fr; gap: 8px; }
button { font: inherit; font-weight: 600; padding: 8px 10px; border-radius: 6px; cursor: pointer;
  border: 1px solid #b8c2cc; background: #fff; color: var(--ink); }
button:hover:not(:disabled) { background: #eef3fb; }
button:disabled { opacity: .55; cursor: progress; }
button[data-op="commit"].ready { background: var(--ok); border-color: var(--ok); color: #fff; }
.answer { margin-top: 10px; padding: 8px 10px; border-radius: 6px; font-size: 13px; min-height: 38px;
  background: #f0f2f5; word-break: break-word; }
.answer[data-kind="ok"] { background: #e6f4ea; color: var(--ok); }
.answer[data-kind="error"] { background: #fdecea; color: var(--bad); }
.answer[data-kind="pending"] { color: var(--muted); }
.pill { display: inline-block; padding: 1px 8px; border-radius: 10px; font-size: 12px; background: #e8edf2; }
.pill[data-phase="passed"] { background: #e6f4ea; color: var(--ok); }
.pill[data-phase="failed"] { background: #fdecea; color: var(--bad); }
.samples { margin: 6px 0 0; padding-left: 18px; font-size: 12px; color: var(--bad); }
.table-wrap { max-height: max(220px, calc(100vh - 560px)); overflow: auto; }
table { width: 100%; border-collapse: collapse; font-size: 13px; }
th { position: sticky; top: 0; background: var(--card); text-align: left; font-size: 12px;
  color: var(--muted); font-weight: 600; border-bottom: 1px solid var(--line); padding: 4px 6px; }
td { padding: 4px 6px; border-bottom: 1px solid #eef1f4; vertical-align: middle; }
td.bar-cell { width: 34%; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.tag { font-size: 11px; padding: 1px 6px; border-radius: 8px; background: #e8edf2; }
.tag.bad { background: #fdecea; color: var(--bad); }
.tag.ok { background: #e6f4ea; color: var(--ok); }
`;

/** A tab icon, so the browser does not ask for /favicon.ico (a 404 in its console). */
export const DASHBOARD_ICON = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="8" r="7" fill="#2f6fdf"/><path d="M4 8h8M9 5l3 3-3 3" stroke="#fff" stroke-width="1.6" fill="none"/></svg>`;
