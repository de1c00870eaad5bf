import type { BenchResult } from './bench';
import { formatCommands, type StepResult } from './change-load';
import { renderLimits } from './limits';
import type { CUTOVER_TARGETS, CutoverResult, CutoverRun } from './cutover';
import { renderNamespaces } from './namespaces';

/** The human-readable summary (stderr): raw figures, then the ratios against their targets. */
export function renderTable(r: BenchResult): string[] {
  const n = (v: number | null | undefined, digits = 0): string =>
    v === null || v === undefined ? '-' : v.toFixed(digits);
  const row = (label: string, docs: string, mb: string, extra = ''): string =>
    `${label.padEnd(40)}${docs.padStart(12)}${mb.padStart(10)}  ${extra}`;
  /** One rate step of (d), (d') or (i): the load, the lag, and how the tool batched. */
  const stepLine = (s: StepResult, workerLag: boolean): string => {
    const commands = s.destinationCommandsPer100;
    return `      target ${n(s.targetOpsPerSec).padStart(7)} achieved ${n(s.achievedOpsPerSec).padStart(7)} ops/s  lag p50 ${n(s.lagP50, 2)} p99 ${n(s.lagP99, 2)} max ${n(s.lagMax, 2)} s  ${workerLag ? `worker lag ≤ ${n(s.workerLagMax)} s  canCommit again ${s.settleSeconds === null ? '-' : `${n(s.settleSeconds, 1)} s`}  ` : ''}${s.held ? 'held' : 'NOT held'}${s.loadLimited ? ' (load-limited)' : ''}${
      commands ? `  destination commands/100: ${formatCommands(commands)}` : ''
    }`;
  };
  const verdict = (value: number | null, target: number, atMost: boolean): string => {
    if (value === null) return 'not measured';
    const ok = atMost ? value <= target : value >= target;
    return `${ok ? 'meets' : 'MISSES'} target ${atMost ? '≤' : '≥'} ${target}`;
  };
  const lines = [
    `Benchmark — ${r.dataset.documents} docs × ~${r.dataset.documentBytes} B over ${r.dataset.collections} collections (${n(r.dataset.bytes / 1e6, 1)} MB)${r.quick ? ', quick' : ''}; embedded verifier ${r.embeddedVerifier ? 'ON in the worker runs (the peer verifies nothing)' : 'OFF (--verification off)'}`,
    `machine: ${r.machine.cpus} CPUs, load average ${r.machine.loadAvgStart.map((l) => l.toFixed(1)).join('/')} → ${r.machine.loadAvgEnd.map((l) => l.toFixed(1)).join('/')} (figures from a shared machine are indicative only)`,
    '',
    row('figure', 'docs/s', 'MB/s', 'detail'),
    row(
      '(a) source raw scan',
      n(r.scan.docsPerSec),
      n(r.scan.mbPerSec, 1),
      `find raw, ${r.scan.concurrency} collection(s) at once`,
    ),
    row(
      '(b) destination raw write',
      n(r.write.docsPerSec),
      n(r.write.mbPerSec, 1),
      `encoded ahead, sent raw unordered, concurrency ${r.write.concurrency}, batch ${r.write.batchSize}`,
    ),
    row(
      '(c) worker copy 1×',
      n(r.copy1x.docsPerSec),
      n(r.copy1x.mbPerSec, 1),
      `${n(r.copy1x.seconds, 1)} s, peak RSS ${n(r.copy1x.peakRssMB)} MB`,
    ),
  ];
  if ('skipped' in r.changeLimit) {
    lines.push(row('(g)/(h) change limit', '-', '', `skipped: ${r.changeLimit.skipped}`));
  } else {
    const { directApply: g, streamRead: h } = r.changeLimit;
    lines.push(
      row(
        '(g) destination applies the mix (ops/s)',
        n(g.opsPerSec),
        '',
        `${g.ops} ops (${g.inserts} ins/${g.updates} upd/${g.deletes} del), unordered bulkWrite`,
      ),
      row(
        '(h) source change-stream read (ev/s)',
        n(h.eventsPerSec),
        '',
        `${h.events} events; the source wrote the mix at ${n(h.sourceWrite.opsPerSec)} ops/s`,
      ),
    );
  }
  if ('skipped' in r.change)
    lines.push(row('(d) sustained change rate', '-', '-', `skipped: ${r.change.skipped}`));
  else {
    lines.push(
      row(
        '(d) sustained change rate (ops/s)',
        n(r.change.sustainedOpsPerSec),
        '',
        `lag p99 ≤ ${r.lagLimitSeconds} s${r.change.sourceLimited ? '; a lower bound: the load generator/source was the limit' : ''}`,
      ),
    );
    for (const s of r.change.steps) {
      lines.push(stepLine(s, true));
    }
  }
  if ('skipped' in r.copy4x)
    lines.push(row(`(f) worker copy ${r.scale}×`, '-', '-', `skipped: ${r.copy4x.skipped}`));
  else
    lines.push(
      row(
        `(f) worker copy ${r.scale}×`,
        n(r.copy4x.docsPerSec),
        n(r.copy4x.mbPerSec, 1),
        `${n(r.copy4x.seconds, 1)} s, peak RSS ${n(r.copy4x.peakRssMB)} MB`,
      ),
    );
  if ('skipped' in r.peer) lines.push(row('(i) peer', '-', '-', `skipped: ${r.peer.skipped}`));
  else {
    lines.push(
      row(
        `(i) peer copy (${r.peer.tool})`,
        n(r.peer.copy.docsPerSec),
        n(r.peer.copy.mbPerSec, 1),
        `${n(r.peer.copy.seconds, 1)} s, peak RSS ${n(r.peer.copy.peakRssMB)} MB`,
      ),
    );
    if ('skipped' in r.peer.change)
      lines.push(row('(i) peer sustained change rate', '-', '', r.peer.change.skipped));
    else {
      lines.push(
        row('(i) peer sustained change rate (ops/s)', n(r.peer.change.sustainedOpsPerSec), '', ''),
      );
      for (const s of r.peer.change.steps) {
        lines.push(stepLine(s, false));
      }
    }
  }
  const tx = r.changeTransactional;
  if ('skipped' in tx) lines.push(row("(d') transactional mix", '-', '', `skipped: ${tx.skipped}`));
  else {
    lines.push(
      row(
        "(d') sustained, transactional mix",
        n(tx.sustainedOpsPerSec),
        '',
        'each 100 ms tick one transaction over every collection; lag p99 ≤ 2 s',
      ),
    );
    for (const st of tx.steps) lines.push(stepLine(st, false));
  }
  lines.push(row('(e) worker peak RSS 1× (copy + changes)', '', '', `${n(r.peakRssMB1x)} MB`));
  if ('skipped' in r.verification)
    lines.push(row('(v) verification at commit', '', '', `skipped: ${r.verification.skipped}`));
  else
    lines.push(
      row(
        '(v) verification at commit',
        '',
        '',
        `${n(r.verification.seconds, 1)} s, RSS ${n(r.verification.peakRssMB)} MB (+${n(r.verification.rssDeltaMB)} MB)`,
      ),
    );
  lines.push('');
  lines.push(
    `copy / min(a, b)          ${n(r.copyRatio, 2).padStart(8)}   ${verdict(r.copyRatio, r.targets.copyRatio, false)}`,
  );
  lines.push(
    `change rate / min(g, h)   ${n(r.changeRatio, 2).padStart(8)}   ${verdict(r.changeRatio, r.targets.changeRatio, false)}`,
  );
  lines.push(
    `change rate / b           ${n(r.changeRatioVsInsert, 2).padStart(8)}   (round 1's figure)`,
  );
  lines.push(
    `copy / peer's copy        ${n(r.peerCopyRatio, 2).padStart(8)}   ${verdict(r.peerCopyRatio, r.targets.peerCopyRatio, false)}`,
  );
  lines.push(
    `change / peer's change    ${n(r.peerChangeRatio, 2).padStart(8)}   ${verdict(r.peerChangeRatio, r.targets.peerChangeRatio, false)}`,
  );
  lines.push(
    `time(${r.scale}×) / time(1×)      ${n(r.scaling4x, 2).padStart(8)}   ${verdict(r.scaling4x, r.targets.scaling4x, true)}`,
  );
  lines.push(
    `  ÷ raw write's growth     ${n(r.scaling4xVsRaw, 2).padStart(8)}   ${verdict(r.scaling4xVsRaw, r.targets.scaling4xVsRaw, true)} (raw write ${r.scale}× ÷ 1×: ${n(r.rawWriteGrowth4x, 2)})`,
  );
  lines.push(
    `peak RSS at ${r.scale}× (MB)       ${n(r.peakRssMB4x).padStart(8)}   ${verdict(r.peakRssMB4x, r.targets.peakRssMB4x, true)}`,
  );
  const verify = 'skipped' in r.verification ? null : r.verification;
  lines.push(
    `verification / copy time  ${n(verify?.ratioToCopy ?? null, 2).padStart(8)}   ${verdict(verify?.ratioToCopy ?? null, r.targets.verifyRatio, true)}`,
  );
  lines.push(
    `worker RSS added (MB)     ${n(verify?.rssDeltaMB ?? null).padStart(8)}   ${verdict(verify?.rssDeltaMB ?? null, r.targets.verifyRssDeltaMB, true)}`,
  );
  lines.push('', ...renderCutover(r.cutover, r.targets.cutover));
  lines.push(
    '',
    ...('skipped' in r.namespaces
      ? [`(k) many namespaces: skipped: ${r.namespaces.skipped}`]
      : renderNamespaces(r.namespaces)),
  );
  lines.push('', ...renderLimits(r.limits));
  if (r.workerErrors.length) lines.push('', `worker errors: ${r.workerErrors.join('; ')}`);
  return lines;
}

/** (j): the three runs, then the cutover figures against their targets. */
export function renderCutover(
  c: CutoverResult | { skipped: string },
  t: typeof CUTOVER_TARGETS,
): string[] {
  if ('skipped' in c) return [`(j) cutover: skipped: ${c.skipped}`];
  const n = (v: number | null | undefined, digits = 2): string =>
    v === null || v === undefined ? '-' : v.toFixed(digits);
  const verdict = (value: number | null, target: number): string =>
    value === null ? 'not measured' : `${value <= target ? 'meets' : 'MISSES'} target ≤ ${target}`;
  const run = (label: string, x: CutoverRun | null): string =>
    x === null
      ? `${label.padEnd(40)}skipped`
      : `${label.padEnd(40)}${x.documents} docs: canCommit after ${n(x.startToCanCommitSeconds, 1)} s` +
        (x.cutoverSeconds !== null
          ? `, cutover ${n(x.cutoverSeconds)} s (worker: ${n(x.reportedCutoverSeconds)} s), final pass ${x.finalPass ? `${x.finalPass.documentsRead} docs in ${x.finalPass.ms} ms` : '-'}`
          : '') +
        `, peak RSS ${n(x.peakRssMB, 0)} MB, ${x.appWrites} app writes`;
  return [
    run('(j) 1×, verification off', c.withoutVerification),
    run('(j) 1×, verification on, commit', c.at1x),
    run('(j) scaled, verification on, commit', c.at4x),
    `cutover seconds 1×        ${n(c.cutoverSeconds).padStart(8)}   ${verdict(c.cutoverSeconds, t.cutoverSeconds)}`,
    `cutover seconds scaled    ${n(c.cutoverSeconds4x).padStart(8)}   ${verdict(c.cutoverSeconds4x, t.cutoverSeconds4x)}`,
    `cutover growth            ${n(c.cutoverGrowth4x).padStart(8)}   ${verdict(c.cutoverGrowth4x, t.cutoverGrowth4x)}`,
    `verification: canCommit time on ÷ off ${n(c.verificationTimeRatio)}   ${verdict(c.verificationTimeRatio, t.verificationTimeRatio)}`,
    `verification: worker RSS added (MB)   ${n(c.verificationRssDeltaMB, 0)}   ${verdict(c.verificationRssDeltaMB, t.verificationRssDeltaMB)}`,
  ];
}
