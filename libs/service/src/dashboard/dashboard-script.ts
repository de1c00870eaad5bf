/**
 * The dashboard's browser script (plain ES2020, no framework, no build step), embedded as a
 * string so `tsc` emits it into dist. `String.raw` keeps regular expressions' backslashes; the
 * script itself uses no backticks and no `${`.
 *
 * It polls `api/v1/progress?detail=namespaces` once a second (never two requests at once), keeps
 * the lag of the last five minutes for the chart, renders a worker's namespaces or a
 * coordinator's instances, and sends pause / resume / commit / reverse, showing the API's answer
 * (the error name and description of a refusal) as it came. Every text from the API goes through
 * textContent (never innerHTML) and through `safe()`, which blanks anything shaped like a URL
 * with a scheme or credentials — the API never sends one, this is a second fence.
 */
export const DASHBOARD_SCRIPT = String.raw`(function () {
  'use strict';
  var API = 'api/v1/';
  var POLL_MS = 1000;

  // An instance launched with an API token: open the page as /#token=<token>. The fragment never
  // reaches the server; the token is kept for this tab (sessionStorage), removed from the address
  // bar, and sent as Authorization: Bearer with every API call.
  var TOKEN = (function () {
    var match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
    var token = null;
    try { token = match ? decodeURIComponent(match[1]) : null; } catch (e) { token = null; }
    try {
      if (token) sessionStorage.setItem('cluster-sync-token', token);
      else token = sessionStorage.getItem('cluster-sync-token');
    } catch (e) { /* storage disabled: the token lives as long as the page */ }
    if (match && history.replaceState) history.replaceState(null, '', location.pathname + location.search);
    return token;
  })();

  function authHeaders(headers) {
    var out = headers || {};
    if (TOKEN) out.authorization = 'Bearer ' + TOKEN;
    return out;
  }
  var WINDOW_MS = 5 * 60 * 1000;
  var MAX_ROWS = 500;
  var lagHistory = [];
  var inFlight = false;

  function $(id) { return document.getElementById(id); }

  function safe(value) {
    if (value === null || value === undefined) return '';
    return String(value)
      .replace(/[a-z][a-z0-9+.-]*:\/\/\S+/gi, '[redacted URL]')
      .replace(/[^\s:@\/]+:[^\s:@\/]+@/g, '[redacted]@');
  }

  function setText(el, value) { el.textContent = safe(value); }

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined) node.textContent = safe(text);
    return node;
  }

  function percent(done, total) {
    if (!total || total <= 0) return done > 0 ? 100 : 0;
    return Math.max(0, Math.min(100, (done / total) * 100));
  }

  function formatPercent(p) {
    // Never "100%" before the end, never a useless ".0".
    var shown = p < 100 && p >= 99.95 ? '99.9' : p.toFixed(1);
    return shown.replace(/\.0$/, '') + '%';
  }

  function formatBytes(n) {
    if (typeof n !== 'number' || !isFinite(n)) return '—';
    var units = ['B', 'KB', 'MB', 'GB', 'TB'];
    var i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i === 0 ? n.toFixed(0) : n.toFixed(1)) + ' ' + units[i];
  }

  function formatNumber(n) { return typeof n === 'number' ? n.toLocaleString('en-US') : '—'; }

  function barNode(p, extraClass, label) {
    var bar = el('div', 'bar');
    var fill = el('div', 'fill' + (extraClass ? ' ' + extraClass : ''));
    fill.style.width = p.toFixed(2) + '%';
    bar.appendChild(fill);
    bar.appendChild(el('span', 'bar-text', label));
    return bar;
  }

  function setBar(fillId, textId, p, label, done) {
    var fill = $(fillId);
    fill.style.width = p.toFixed(2) + '%';
    fill.classList.toggle('done', !!done);
    setText($(textId), label);
  }

  // ---- progress -----------------------------------------------------------------------------

  function copyFigures(progress) {
    var copy = progress.collectionCopy;
    if (!copy) return null;
    return { copied: copy.estimatedCopiedBytes, total: copy.estimatedTotalBytes,
      p: percent(copy.estimatedCopiedBytes, copy.estimatedTotalBytes) };
  }

  function render(progress) {
    var coordinator = Array.isArray(progress.instances);
    setText($('role'), coordinator ? 'coordinator' : 'worker');
    var identity = [];
    if (progress.directionMapping) {
      identity.push(progress.directionMapping.Source + ' → ' + progress.directionMapping.Destination);
    }
    if (progress.syncID) identity.push('syncID ' + progress.syncID);
    if (progress.coordinatorID) identity.push('coordinatorID ' + progress.coordinatorID);
    setText($('identity'), identity.join(' · '));

    var state = $('state');
    setText(state, progress.state);
    state.setAttribute('data-state', progress.state || '');
    setText($('info'), progress.info || '');

    var copy = copyFigures(progress);
    if (copy) {
      setBar('copy-bar', 'copy-percent', copy.p, formatPercent(copy.p), copy.p >= 100);
      setText($('copy-bytes'), formatBytes(copy.copied) + ' of ' + formatBytes(copy.total) + ' (estimated)');
    } else {
      setBar('copy-bar', 'copy-percent', 0, progress.state === 'IDLE' ? 'not started' : '—', false);
      setText($('copy-bytes'), '');
    }
    document.title = (progress.state || '') + (copy ? ' ' + formatPercent(copy.p) : '') + ' · cluster-sync';

    setText($('lag'), typeof progress.lagTimeSeconds === 'number' ? progress.lagTimeSeconds.toFixed(0) + ' s' : '—');
    setText($('events'), formatNumber(progress.totalEventsApplied));
    var ns = progress.namespaces;
    setText($('namespaces'), ns && typeof ns.total === 'number' ? ns.copied + ' of ' + ns.total + ' namespaces copied' : '');
    setText($('can-commit'), progress.state === 'COMMITTED' ? 'committed' : progress.canCommit ? 'ready' : 'not ready');
    $('can-commit').style.color = progress.canCommit || progress.state === 'COMMITTED' ? 'var(--ok)' : 'var(--muted)';
    setText($('can-write'), progress.canWrite === null || progress.canWrite === undefined ? '' :
      'destination writable: ' + (progress.canWrite ? 'yes' : 'no'));
    document.querySelector('button[data-op="commit"]').classList.toggle('ready', !!progress.canCommit);

    var problems = [];
    if (progress.failure) problems.push('Failure: ' + progress.failure);
    if (progress.waitingFor) problems.push('Waiting for: ' + progress.waitingFor);
    if (Array.isArray(progress.missingInstances) && progress.missingInstances.length) {
      problems.push('Missing workers: ' + progress.missingInstances.join(', '));
    }
    showAlert(problems.join('\n'));

    recordLag(progress);
    drawLag();
    renderVerification(progress.verification);
    if (coordinator) renderInstances(progress.instances);
    else renderNamespaces(progress.namespaceDetail, progress.state);
  }

  function showAlert(text) {
    var alert = $('alert');
    alert.hidden = !text;
    setText(alert, text);
  }

  // ---- lag chart (hand-drawn SVG) -----------------------------------------------------------

  function recordLag(progress) {
    var now = Date.now();
    lagHistory.push({ t: now, lag: typeof progress.lagTimeSeconds === 'number' ? progress.lagTimeSeconds : null });
    while (lagHistory.length && lagHistory[0].t < now - WINDOW_MS) lagHistory.shift();
  }

  function niceMax(v) {
    if (v <= 1) return 1;
    var steps = [1, 2, 5, 10];
    var magnitude = Math.pow(10, Math.floor(Math.log10(v)));
    for (var i = 0; i < steps.length; i++) if (steps[i] * magnitude >= v) return steps[i] * magnitude;
    return 10 * magnitude;
  }

  function svg(tag, attrs) {
    var node = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (var key in attrs) node.setAttribute(key, String(attrs[key]));
    return node;
  }

  function drawLag() {
    var chart = $('lag-chart');
    var W = 600, H = 160, TOP = 8, BOTTOM = 4;
    while (chart.firstChild) chart.removeChild(chart.firstChild);
    var max = 0;
    lagHistory.forEach(function (s) { if (s.lag !== null && s.lag > max) max = s.lag; });
    max = niceMax(max);
    setText($('lag-max'), '(scale 0–' + max + ' s)');
    for (var g = 0; g <= 4; g++) {
      var y = TOP + (H - TOP - BOTTOM) * g / 4;
      chart.appendChild(svg('line', { x1: 0, x2: W, y1: y, y2: y, 'class': 'grid' }));
    }
    var now = Date.now();
    var segments = [];
    var current = [];
    lagHistory.forEach(function (s) {
      if (s.lag === null) { if (current.length) segments.push(current); current = []; return; }
      var x = W * (1 - (now - s.t) / WINDOW_MS);
      var y = TOP + (H - TOP - BOTTOM) * (1 - s.lag / max);
      current.push(x.toFixed(1) + ',' + y.toFixed(1));
    });
    if (current.length) segments.push(current);
    segments.forEach(function (points) {
      if (points.length === 1) points.push(points[0]);
      chart.appendChild(svg('polyline', { points: points.join(' '), 'class': 'line' }));
    });
  }

  // ---- verification -------------------------------------------------------------------------

  function renderVerification(v) {
    var section = $('verification');
    if (!v || typeof v !== 'object') { section.hidden = true; return; }
    section.hidden = false;
    var phase = $('verify-phase');
    setText(phase, v.phase);
    phase.setAttribute('data-phase', v.phase || '');
    var p = percent(v.namespacesVerified || 0, v.namespacesTotal || 0);
    var fill = $('verify-bar');
    fill.style.width = p.toFixed(2) + '%';
    fill.classList.toggle('failed', v.phase === 'failed' || v.mismatches > 0);
    setText($('verify-text'), (v.namespacesVerified || 0) + ' of ' + (v.namespacesTotal || 0) + ' namespaces verified');
    var figures = ['mismatches: ' + (v.mismatches || 0)];
    if (typeof v.pendingRecheck === 'number') figures.push('to re-check: ' + v.pendingRecheck);
    if (v.documentsRepaired > 0) figures.push('repaired from the source: ' + v.documentsRepaired);
    setText($('verify-figures'), figures.join(' · '));
    var list = $('verify-samples');
    while (list.firstChild) list.removeChild(list.firstChild);
    (Array.isArray(v.samples) ? v.samples : []).slice(0, 10).forEach(function (s) {
      var text = s.namespace + ': ' + (s.problems || []).join('; ');
      if (s.ids && s.ids.length) text += ' (_id ' + s.ids.slice(0, 3).join(', ') + ')';
      list.appendChild(el('li', '', text));
    });
  }

  // ---- detail tables ------------------------------------------------------------------------

  function setHead(columns) {
    var head = $('detail-head');
    if (head.getAttribute('data-columns') === columns.join('|')) return;
    head.setAttribute('data-columns', columns.join('|'));
    while (head.firstChild) head.removeChild(head.firstChild);
    var row = el('tr');
    columns.forEach(function (c) { row.appendChild(el('th', '', c)); });
    head.appendChild(row);
  }

  function replaceRows(rows, total, noun) {
    var body = $('detail-body');
    while (body.firstChild) body.removeChild(body.firstChild);
    rows.forEach(function (r) { body.appendChild(r); });
    setText($('detail-note'), total > rows.length ? 'showing ' + rows.length + ' of ' + total + ' ' + noun : '');
  }

  function cell(text, className) { return el('td', className || '', text); }

  function renderNamespaces(list, state) {
    setText($('detail-title'), 'Namespaces');
    setHead(['namespace', 'state', 'copied', 'partitions', 'bytes']);
    if (!Array.isArray(list)) {
      replaceRows([], 0, 'namespaces');
      setText($('detail-note'), state === 'IDLE' ? 'No sync yet: start one through the API.' : 'No namespace detail.');
      return;
    }
    var rows = list.slice(0, MAX_ROWS).map(function (n) {
      var tr = el('tr');
      tr.appendChild(cell(n.namespace));
      var tag = el('span', 'tag' + (n.state === 'copied' ? ' ok' : ''), n.state);
      var stateCell = el('td'); stateCell.appendChild(tag); tr.appendChild(stateCell);
      var barCell = el('td', 'bar-cell');
      if (n.state === 'created') barCell.appendChild(el('span', 'muted', n.type === 'view' ? 'view' : 'nothing to copy'));
      else {
        var p = n.state === 'copied' ? 100 : percent(n.copiedBytes, n.estimatedBytes);
        barCell.appendChild(barNode(p, p >= 100 ? 'done' : '', formatPercent(p)));
      }
      tr.appendChild(barCell);
      tr.appendChild(cell(n.partitions ? n.partitions.done + ' / ' + n.partitions.total : '—', 'num'));
      tr.appendChild(cell(formatBytes(n.copiedBytes) + ' / ' + formatBytes(n.estimatedBytes), 'num'));
      return tr;
    });
    replaceRows(rows, list.length, 'namespaces');
  }

  function renderInstances(list) {
    setText($('detail-title'), 'Workers');
    setHead(['worker', 'shard', 'state', 'copied', 'lag', 'events', 'last seen', 'status']);
    var rows = list.slice(0, MAX_ROWS).map(function (i) {
      var p = i.progress || {};
      var tr = el('tr');
      tr.appendChild(cell(i.id));
      tr.appendChild(cell(i.shardId || '—'));
      tr.appendChild(cell(p.state || '—'));
      var barCell = el('td', 'bar-cell');
      var copy = copyFigures(p);
      if (copy) barCell.appendChild(barNode(copy.p, copy.p >= 100 ? 'done' : '', formatPercent(copy.p)));
      else barCell.appendChild(el('span', 'muted', '—'));
      tr.appendChild(barCell);
      tr.appendChild(cell(typeof p.lagTimeSeconds === 'number' ? p.lagTimeSeconds.toFixed(0) + ' s' : '—', 'num'));
      tr.appendChild(cell(formatNumber(p.totalEventsApplied), 'num'));
      tr.appendChild(cell(typeof i.lastSeenSecondsAgo === 'number' ? i.lastSeenSecondsAgo.toFixed(1) + ' s ago' : 'never', 'num'));
      var status = el('td');
      if (i.missing) status.appendChild(el('span', 'tag bad', 'missing'));
      if (i.error) status.appendChild(el('span', 'tag bad', i.error.error + ': ' + i.error.errorDescription));
      if (typeof i.pendingCommands === 'number' && i.pendingCommands > 0) {
        status.appendChild(el('span', 'tag', i.pendingCommands + ' queued'));
      }
      if (!status.firstChild) status.appendChild(el('span', 'tag ok', 'reporting'));
      tr.appendChild(status);
      return tr;
    });
    replaceRows(rows, list.length, 'workers');
    if (!list.length) setText($('detail-note'), 'No worker has joined yet.');
  }

  // ---- polling ------------------------------------------------------------------------------

  function setConnection(ok, text) {
    var c = $('connection');
    c.setAttribute('data-ok', ok ? 'true' : 'false');
    setText(c, text);
  }

  async function readJson(response) {
    var text = await response.text();
    try { return JSON.parse(text); } catch (e) { return null; }
  }

  async function poll() {
    try {
      var response = await fetch(API + 'progress?detail=namespaces', { headers: authHeaders(), cache: 'no-store', signal: AbortSignal.timeout(5000) });
      var body = await readJson(response);
      if (body && body.success && body.progress) {
        render(body.progress);
        setConnection(true, 'live · ' + new Date().toLocaleTimeString());
      } else if (body && body.error) {
        setConnection(false, body.error);
        showAlert(body.error + ': ' + (body.errorDescription || ''));
      } else {
        setConnection(false, 'HTTP ' + response.status);
      }
    } catch (error) {
      setConnection(false, 'API unreachable');
    }
  }

  async function pollLoop() {
    await poll();
    setTimeout(pollLoop, POLL_MS);
  }

  // ---- commands -----------------------------------------------------------------------------

  var CONFIRM = {
    commit: 'Commit the sync?\n\nThe source stops taking writes and the application moves to the destination. ' +
      'The API refuses while canCommit is false.',
    reverse: 'Reverse the sync?\n\nThe destination becomes the source of a new sync back to the old source.',
  };

  function showAnswer(kind, text) {
    var answer = $('answer');
    answer.setAttribute('data-kind', kind);
    setText(answer, text);
  }

  async function send(button) {
    if (inFlight) return;
    var op = button.getAttribute('data-op');
    if (CONFIRM[op] && !window.confirm(CONFIRM[op])) {
      showAnswer('none', op + ': cancelled, nothing sent.');
      return;
    }
    var buttons = document.querySelectorAll('button[data-op]');
    var label = button.textContent;
    inFlight = true;
    buttons.forEach(function (b) { b.disabled = true; });
    button.setAttribute('aria-busy', 'true');
    button.textContent = label.replace('…', '') + ' …';
    showAnswer('pending', 'POST ' + op + ' …');
    var time = function () { return ' (' + new Date().toLocaleTimeString() + ')'; };
    try {
      var response = await fetch(API + op, {
        method: 'POST', headers: authHeaders({ 'content-type': 'application/json' }), body: '{}',
        cache: 'no-store', signal: AbortSignal.timeout(120000),
      });
      var body = await readJson(response);
      if (body && body.success === true) showAnswer('ok', op + ': accepted' + time());
      else if (body && body.error) {
        showAnswer('error', op + ' refused — ' + body.error + ': ' + (body.errorDescription || '') + time());
      } else showAnswer('error', op + ': unexpected answer, HTTP ' + response.status + time());
    } catch (error) {
      showAnswer('error', op + ': no answer from the API (' + (error && error.name === 'TimeoutError' ? 'timed out' : 'connection failed') + ')' + time());
    } finally {
      inFlight = false;
      button.textContent = label;
      button.removeAttribute('aria-busy');
      buttons.forEach(function (b) { b.disabled = false; });
    }
    await poll();
  }

  document.querySelectorAll('button[data-op]').forEach(function (b) {
    b.addEventListener('click', function () { void send(b); });
  });
  window.addEventListener('resize', drawLag);
  void pollLoop();
})();
`;
