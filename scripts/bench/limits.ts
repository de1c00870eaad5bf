/**
 * Where this machine's CPU caps the bench's ratios. Every figure is a ceiling computed from CPU
 * per document or per change measured in the same run (cpu-budget.ts), never an estimate:
 *
 * - "bare": the work no sync tool can avoid — the source serving the scan (a) or taking the
 *   change load and serving one change stream (h), the destination taking the writes (b) or
 *   applying the mix (g), the load writer writing the load — with the tool itself costing nothing.
 * - "driver floor": the same plus what the official driver itself costs the tool's process — the
 *   bare copy's client (a+b: raw read and raw write, no engine), or the change stream's reading
 *   client (h) and the direct writes' client (g). No tool on the driver pays less; a target above
 *   this ceiling cannot be met here by any tool built on it, this project's stack included.
 * - "worker, bare emulators": the same plus the worker at its own measured CPU per unit — what
 *   the worker would reach if the emulators did no more per unit than in the raw measurements.
 * - "as run": every process as measured during the worker's own copy or change step (the
 *   emulators' share includes the embedded verifier's reads when it is on): the rate a fully
 *   busy machine allows, to hold against the rate achieved.
 *
 * A ratio's target above its bare ceiling cannot be met on this machine by any tool.
 */
import type { ChangeResult, StepResult } from './change-load';
import { describeCpu, partOf, rateCeiling, type CpuMark } from './cpu-budget';
import type { BareCopyResult, ScanResult, WriteResult } from './raw-rates';

export interface CopyLimits {
  /** The worker's copy rate (c), to hold the ceilings against. */
  docsPerSec: number;
  /** CPU per document during the worker's copy (c), by process. */
  cpuMicrosPerDoc: CpuMark;
  rawScanCpuMicrosPerDoc: CpuMark;
  rawWriteCpuMicrosPerDoc: CpuMark;
  /** The source's scan and the destination's write alone, the tool free: docs/s, ÷ min(a, b). */
  bareDocsPerSec: number | null;
  bareCopyRatio: number | null;
  /** The bare copy's CPU per document (a+b), its client as `bench`. */
  bareCopyCpuMicrosPerDoc: CpuMark;
  /** The bare ceiling plus the bare copy's client: docs/s, ÷ min(a, b), ÷ the peer's copy. */
  driverFloorDocsPerSec: number | null;
  driverFloorCopyRatio: number | null;
  driverFloorPeerCopyRatio: number | null;
  /** a's source + b's destination + the worker's CPU per document in (c). */
  workerBareEmulatorsDocsPerSec: number | null;
  workerBareEmulatorsCopyRatio: number | null;
  /** Every process as measured during (c): the ceiling of a fully busy machine. */
  asRunDocsPerSec: number | null;
  /** bareDocsPerSec ÷ the peer's copy rate: what peerCopyRatio cannot pass here. */
  peerCopyRatioCeiling: number | null;
}

/** A change step's rate and CPU per change, as the limits report it. */
type StepFigures = Pick<StepResult, 'targetOpsPerSec' | 'achievedOpsPerSec' | 'cpuMicrosPerOp'>;

export interface ChangeLimits {
  /** The worker's highest held step, and the first step above it that did not hold. */
  held: StepFigures | null;
  notHeld: StepFigures | null;
  /** The peer's highest held step (its own CPU as `peer`, its state store's as `redis`). */
  peerHeld: StepFigures | null;
  /**
   * The source taking the load and serving one stream (h), the destination applying it (g), the
   * load writer as in the held step; the tool free: ops/s, ÷ min(g, h), ÷ the peer's figure.
   */
  bareOpsPerSec: number | null;
  bareChangeRatio: number | null;
  barePeerChangeRatio: number | null;
  /** The driver's own cost per change: h's reading client + g's writing client (µs). */
  driverCpuMicrosPerOp: number | null;
  /** The bare figures plus the driver's own cost: ops/s, ÷ min(g, h), ÷ the peer's figure. */
  driverFloorOpsPerSec: number | null;
  driverFloorChangeRatio: number | null;
  driverFloorPeerChangeRatio: number | null;
  /** The bare figures plus the worker's own CPU per change in the held step. */
  workerBareEmulatorsOpsPerSec: number | null;
  workerBareEmulatorsChangeRatio: number | null;
  /** Every process as measured in the held step: the ceiling of a fully busy machine. */
  asRunOpsPerSec: number | null;
}

export interface PhysicalLimits {
  cores: number;
  copy: CopyLimits;
  change: ChangeLimits | null;
}

const round2 = (v: number): number => Math.round(v * 100) / 100;
const ratio = (a: number | null, b: number | null | undefined): number | null =>
  a === null || b === null || b === undefined || b <= 0 ? null : round2(a / b);

function heldAndNext(result: ChangeResult | { skipped: string } | undefined): {
  held: StepResult | null;
  notHeld: StepResult | null;
} {
  if (!result || 'skipped' in result) return { held: null, notHeld: null };
  const held = result.steps
    .filter((s) => s.held)
    .reduce<StepResult | null>(
      (best, s) => (best === null || s.achievedOpsPerSec > best.achievedOpsPerSec ? s : best),
      null,
    );
  const notHeld =
    result.steps
      .filter((s) => !s.held && s.targetOpsPerSec > (held?.targetOpsPerSec ?? 0))
      .sort((a, b) => a.targetOpsPerSec - b.targetOpsPerSec)[0] ?? null;
  return { held, notHeld };
}

const stepFigures = (s: StepResult | null): StepFigures | null =>
  s === null
    ? null
    : {
        targetOpsPerSec: Math.round(s.targetOpsPerSec),
        achievedOpsPerSec: Math.round(s.achievedOpsPerSec),
        cpuMicrosPerOp: s.cpuMicrosPerOp,
      };

export function physicalLimits(input: {
  cores: number;
  scan: ScanResult;
  write: WriteResult;
  bareCopy: BareCopyResult;
  copy: { cpuMicrosPerDoc: CpuMark; docsPerSec: number };
  peerCopyDocsPerSec: number | null;
  changeLimit: {
    opsPerSec: number;
    directApply: { cpuMicrosPerOp: CpuMark };
    streamRead: { cpuMicrosPerEvent: CpuMark; clientCpuMicrosPerEvent: number };
  } | null;
  change: ChangeResult | { skipped: string } | undefined;
  peerChange: ChangeResult | { skipped: string } | undefined;
}): PhysicalLimits {
  const { cores, scan, write, copy } = input;
  const minRaw = Math.min(scan.docsPerSec, write.docsPerSec);
  const bare = rateCeiling(
    { ...partOf(scan.cpuMicrosPerDoc, 'source'), ...partOf(write.cpuMicrosPerDoc, 'destination') },
    ['source', 'destination'],
    cores,
  );
  const driverFloor = rateCeiling(
    {
      ...partOf(scan.cpuMicrosPerDoc, 'source'),
      ...partOf(write.cpuMicrosPerDoc, 'destination'),
      ...partOf(input.bareCopy.cpuMicrosPerDoc, 'bench', 'tool'),
    },
    ['source', 'destination', 'tool'],
    cores,
  );
  const workerBare = rateCeiling(
    {
      ...partOf(scan.cpuMicrosPerDoc, 'source'),
      ...partOf(write.cpuMicrosPerDoc, 'destination'),
      ...partOf(copy.cpuMicrosPerDoc, 'worker'),
    },
    ['source', 'destination', 'worker'],
    cores,
  );
  const asRunCopy = rateCeiling(copy.cpuMicrosPerDoc, Object.keys(copy.cpuMicrosPerDoc), cores);
  const copyLimits: CopyLimits = {
    docsPerSec: Math.round(copy.docsPerSec),
    cpuMicrosPerDoc: copy.cpuMicrosPerDoc,
    rawScanCpuMicrosPerDoc: scan.cpuMicrosPerDoc,
    rawWriteCpuMicrosPerDoc: write.cpuMicrosPerDoc,
    bareDocsPerSec: bare,
    bareCopyRatio: ratio(bare, minRaw),
    bareCopyCpuMicrosPerDoc: input.bareCopy.cpuMicrosPerDoc,
    driverFloorDocsPerSec: driverFloor,
    driverFloorCopyRatio: ratio(driverFloor, minRaw),
    driverFloorPeerCopyRatio: ratio(driverFloor, input.peerCopyDocsPerSec),
    workerBareEmulatorsDocsPerSec: workerBare,
    workerBareEmulatorsCopyRatio: ratio(workerBare, minRaw),
    asRunDocsPerSec: asRunCopy,
    peerCopyRatioCeiling: ratio(bare, input.peerCopyDocsPerSec),
  };
  if (input.changeLimit === null) return { cores, copy: copyLimits, change: null };

  const { held, notHeld } = heldAndNext(input.change);
  const peer = heldAndNext(input.peerChange).held;
  const load = (s: StepResult | null): CpuMark => {
    const out: CpuMark = {};
    for (const [name, us] of Object.entries(s?.cpuMicrosPerOp ?? {}))
      if (name.startsWith('bench') || name.startsWith('writer')) out[name] = us;
    return out;
  };
  const bareCost: CpuMark = {
    ...partOf(input.changeLimit.streamRead.cpuMicrosPerEvent, 'source'),
    ...partOf(input.changeLimit.directApply.cpuMicrosPerOp, 'destination'),
    ...load(held),
  };
  const bareChange = rateCeiling(bareCost, Object.keys(bareCost), cores);
  const { streamRead, directApply } = input.changeLimit;
  const driverCost =
    streamRead.clientCpuMicrosPerEvent > 0 && (directApply.cpuMicrosPerOp.bench ?? 0) > 0
      ? streamRead.clientCpuMicrosPerEvent + directApply.cpuMicrosPerOp.bench!
      : null;
  const withDriver: CpuMark = { ...bareCost, tool: driverCost ?? 0 };
  const driverFloorChange =
    driverCost === null ? null : rateCeiling(withDriver, Object.keys(withDriver), cores);
  const withWorker: CpuMark = { ...bareCost, ...partOf(held?.cpuMicrosPerOp ?? {}, 'worker') };
  const workerBareChange = rateCeiling(withWorker, Object.keys(withWorker), cores);
  const asRunChange = held
    ? rateCeiling(held.cpuMicrosPerOp, Object.keys(held.cpuMicrosPerOp), cores)
    : null;
  const peerSustained = peer?.achievedOpsPerSec ?? null;
  return {
    cores,
    copy: copyLimits,
    change: {
      held: stepFigures(held),
      notHeld: stepFigures(notHeld),
      peerHeld: stepFigures(peer),
      bareOpsPerSec: held ? bareChange : null,
      bareChangeRatio: held ? ratio(bareChange, input.changeLimit.opsPerSec) : null,
      barePeerChangeRatio: held ? ratio(bareChange, peerSustained) : null,
      driverCpuMicrosPerOp: driverCost,
      driverFloorOpsPerSec: held ? driverFloorChange : null,
      driverFloorChangeRatio: held ? ratio(driverFloorChange, input.changeLimit.opsPerSec) : null,
      driverFloorPeerChangeRatio: held ? ratio(driverFloorChange, peerSustained) : null,
      workerBareEmulatorsOpsPerSec: held ? workerBareChange : null,
      workerBareEmulatorsChangeRatio: held
        ? ratio(workerBareChange, input.changeLimit.opsPerSec)
        : null,
      asRunOpsPerSec: asRunChange,
    },
  };
}

/** The limits as readable lines for the bench's table. */
export function renderLimits(l: PhysicalLimits): string[] {
  const n = (v: number | null): string => (v === null ? '-' : String(v));
  // A ceiling below what was achieved means the short raw measurements it rests on were noisy.
  const noisy = (ceiling: number | null, achieved: number | undefined): string =>
    ceiling !== null && achieved !== undefined && achieved > ceiling
      ? ` (below the ${achieved} achieved: the raw figures behind it were noisy; not a limit)`
      : '';
  const lines = [
    `Where this machine's ${l.cores} cores cap the ratios (CPU µs per document/change, measured in this run):`,
    `  copy (c): ${describeCpu(l.copy.cpuMicrosPerDoc)}; raw scan (a): ${describeCpu(l.copy.rawScanCpuMicrosPerDoc)}; raw write (b): ${describeCpu(l.copy.rawWriteCpuMicrosPerDoc)}`,
    `  copy ceiling, tool free (a's source + b's destination): ${n(l.copy.bareDocsPerSec)} docs/s → copyRatio ≤ ${n(l.copy.bareCopyRatio)}, peerCopyRatio ≤ ${n(l.copy.peerCopyRatioCeiling)}${noisy(l.copy.bareDocsPerSec, l.copy.docsPerSec)}`,
    `  bare copy (a+b): ${describeCpu(l.copy.bareCopyCpuMicrosPerDoc)} (bench: the driver's raw read and raw write, no engine)`,
    `  copy ceiling, the driver's floor (tool free + the bare copy's client): ${n(l.copy.driverFloorDocsPerSec)} docs/s → copyRatio ≤ ${n(l.copy.driverFloorCopyRatio)}, peerCopyRatio ≤ ${n(l.copy.driverFloorPeerCopyRatio)}${noisy(l.copy.driverFloorDocsPerSec, l.copy.docsPerSec)}`,
    `  copy ceiling, the worker's own CPU on the emulators' raw cost: ${n(l.copy.workerBareEmulatorsDocsPerSec)} docs/s → copyRatio ≤ ${n(l.copy.workerBareEmulatorsCopyRatio)}${noisy(l.copy.workerBareEmulatorsDocsPerSec, l.copy.docsPerSec)}`,
    `  copy ceiling, every process as measured in (c): ${n(l.copy.asRunDocsPerSec)} docs/s`,
  ];
  const c = l.change;
  if (c) {
    if (c.held)
      lines.push(
        `  change, highest held step (${c.held.achievedOpsPerSec} ops/s): ${describeCpu(c.held.cpuMicrosPerOp)}`,
      );
    if (c.notHeld)
      lines.push(
        `  change, first step not held (${c.notHeld.achievedOpsPerSec} ops/s): ${describeCpu(c.notHeld.cpuMicrosPerOp)}`,
      );
    if (c.peerHeld)
      lines.push(
        `  peer, highest held step (${c.peerHeld.achievedOpsPerSec} ops/s): ${describeCpu(c.peerHeld.cpuMicrosPerOp)}`,
      );
    lines.push(
      `  change ceiling, tool free (h's source + g's destination + the load): ${n(c.bareOpsPerSec)} ops/s → changeRatio ≤ ${n(c.bareChangeRatio)}, peerChangeRatio ≤ ${n(c.barePeerChangeRatio)}${noisy(c.bareOpsPerSec, c.held?.achievedOpsPerSec)}`,
      `  change ceiling, the driver's floor (tool free + ${n(c.driverCpuMicrosPerOp)} µs: h's reading client + g's writing client): ${n(c.driverFloorOpsPerSec)} ops/s → changeRatio ≤ ${n(c.driverFloorChangeRatio)}, peerChangeRatio ≤ ${n(c.driverFloorPeerChangeRatio)}${noisy(c.driverFloorOpsPerSec, c.held?.achievedOpsPerSec)}`,
      `  change ceiling, the worker's own CPU on the emulators' bare cost: ${n(c.workerBareEmulatorsOpsPerSec)} ops/s → changeRatio ≤ ${n(c.workerBareEmulatorsChangeRatio)}${noisy(c.workerBareEmulatorsOpsPerSec, c.held?.achievedOpsPerSec)}`,
      `  change ceiling, every process as measured in the held step: ${n(c.asRunOpsPerSec)} ops/s`,
    );
  }
  return lines;
}
