import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { describeEmulatorOnly } from '../helpers/real-clusters';

/**
 * Smoke test of `npm run bench -- --quick` on a small dataset: it must complete and end its
 * stdout with one JSON object holding the headline figures. Speed is never asserted (CI
 * machines are shared and slow); the figures only have to be present (a number, or null when a
 * phase could not run).
 */
const BENCH = resolve(__dirname, '../../dist/scripts/bench/bench.js');
const REQUIRED = [
  'copyRatio',
  'changeRatio',
  'changeRatioVsInsert',
  'scaling4x',
  'peakRssMB4x',
  'peerCopyRatio',
  'peerChangeRatio',
] as const;

let child: ChildProcess | undefined;

afterEach(() => {
  // A timed-out run must not leave its emulators and worker behind: on SIGTERM the bench stops them.
  if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
});

function run(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    child = spawn(process.execPath, [BENCH, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('exit', (code) => done({ code, stdout, stderr }));
  });
}

describeEmulatorOnly('the benchmark starts its own emulated clusters')(
  'bench --quick (smoke)',
  () => {
    it('completes and prints the figures as a JSON last line', async () => {
      expect(existsSync(BENCH)).toBe(true); // built by `npm test`'s pretest
      const { code, stdout, stderr } = await run([
        '--quick',
        '--docs',
        '2000',
        '--collections',
        '4',
        '--window',
        '2',
        '--rates',
        '0.05,0.1',
      ]);
      if (code !== 0) throw new Error(`bench exited with ${code}:\n${stderr.slice(-4000)}`);
      const lines = stdout.trim().split('\n');
      const result = JSON.parse(lines[lines.length - 1]!) as Record<string, unknown>;
      for (const key of REQUIRED) {
        expect(key in result).toBe(true);
        expect(result[key] === null || typeof result[key] === 'number').toBe(true);
      }
      expect(typeof result.copyRatio).toBe('number');
      expect(result).toEqual(
        expect.objectContaining({
          scan: expect.objectContaining({ docsPerSec: expect.any(Number) }),
          write: expect.objectContaining({ docsPerSec: expect.any(Number) }),
          copy1x: expect.objectContaining({
            docsPerSec: expect.any(Number),
            seconds: expect.any(Number),
          }),
          time1xSeconds: expect.any(Number),
        }),
      );
      expect(stderr).toContain('copy / min(a, b)');
      // Where the machine caps the ratios: CPU per document of every process of the copy,
      // measured from /proc, and the ceilings computed from them.
      const limits = result.limits as {
        cores: number;
        copy: {
          cpuMicrosPerDoc: Record<string, number>;
          bareDocsPerSec: number | null;
          driverFloorDocsPerSec: number | null;
        };
        change: { held: { cpuMicrosPerOp: Record<string, number> } | null } | null;
      };
      expect(limits.cores).toBeGreaterThan(0);
      for (const part of ['source', 'destination', 'worker'])
        expect(limits.copy.cpuMicrosPerDoc[part]).toBeGreaterThan(0);
      expect(limits.copy.bareDocsPerSec).toBeGreaterThan(0);
      // The bare copy (the driver's raw read and write, no engine) copied every document, and
      // its client's cost gives the driver-floor ceiling.
      const bareCopy = result.bareCopy as {
        documents: number;
        cpuMicrosPerDoc: Record<string, number>;
      };
      expect(bareCopy.documents).toBe(2000);
      expect(bareCopy.cpuMicrosPerDoc.bench).toBeGreaterThan(0);
      expect(limits.copy.driverFloorDocsPerSec).toBeGreaterThan(0);
      expect(stderr).toContain("copy ceiling, the driver's floor");
      if (limits.change?.held) {
        expect(limits.change.held.cpuMicrosPerOp.worker).toBeGreaterThan(0);
        expect(limits.change.held.cpuMicrosPerOp.source).toBeGreaterThan(0);
      }
      // How the worker batched its writes: the destination's commands per 100 changes of each
      // step (insert events go out as inserts, updates as updates); and how soon after each
      // step the worker said canCommit again.
      const change = result.change as {
        steps?: Array<{
          destinationCommandsPer100: Record<string, number> | null;
          settleSeconds: number | null;
        }>;
      };
      for (const step of change.steps ?? []) {
        expect(step.destinationCommandsPer100).toEqual({
          insert: expect.any(Number),
          update: expect.any(Number),
          delete: expect.any(Number),
          find: expect.any(Number),
        });
        expect(step.destinationCommandsPer100!.insert).toBeGreaterThan(0);
        expect(step.destinationCommandsPer100!.update).toBeGreaterThan(0);
        expect(step.settleSeconds === null || step.settleSeconds >= 0).toBe(true);
      }
      expect(stderr).toContain('destination commands/100: insert');
      expect(stderr).toContain('canCommit again');
      expect(stderr).toContain("Where this machine's");
      // (k) at the quick count: many small collections synced, committed and compared.
      const namespaces = result.namespaces as {
        namespaces: number;
        perDatabase: number;
        rawCreatePerSec: number;
        createRatio: number;
        commitSeconds: number;
        peakRssMB: number;
        idleCpuPercent: number;
        comparison: { documentsCompared: number; differences: number };
      };
      expect([namespaces.namespaces, namespaces.perDatabase]).toEqual([200, 500]);
      for (const figure of [
        'rawCreatePerSec',
        'createRatio',
        'commitSeconds',
        'peakRssMB',
      ] as const)
        expect(namespaces[figure]).toBeGreaterThan(0);
      // The worker holding at canCommit was measured (a figure, asserted only to be one).
      expect(namespaces.idleCpuPercent).toBeGreaterThanOrEqual(0);
      expect(stderr).toContain('holding at canCommit      worker CPU');
      expect(namespaces.comparison).toEqual({ documentsCompared: 400, differences: 0 });
      expect(stderr).toContain('(k) 200 namespaces');
    }, 300_000);
  },
);
