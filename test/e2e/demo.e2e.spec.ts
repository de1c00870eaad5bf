import {
  killGroup,
  spawnProcess,
  stopAllProcesses,
  type ManagedProcess,
} from '../helpers/processes';
import { describeEmulatorOnly } from '../helpers/real-clusters';
import { DEMO, buildOnce } from './support/harness';

/**
 * The README's main job (`npm run demo` = build, then `node dist/scripts/demo.js`): a sharded →
 * sharded migration through the coordinator (redis-server, two workers, emulated clusters), and
 * `npm run demo -- --replica-set`; each verified while an application writes.
 */
describeEmulatorOnly('the demo starts its own emulated clusters')('demo (npm run demo)', () => {
  beforeAll(() => buildOnce(), 600_000);

  const runs: ManagedProcess[] = [];

  afterAll(async () => {
    // The demo stops its emulators, workers and Redis itself; if it died early they would be orphans.
    for (const run of runs) killGroup(run);
    await stopAllProcesses();
  }, 30_000);

  async function demo(args: string[]): Promise<string> {
    const run = spawnProcess('node', [DEMO, ...args], {}, { processGroup: true });
    runs.push(run);
    const exit = await run.waitForExit(300_000).catch(async (error: unknown) => {
      await run.stop();
      throw new Error(`${String(error)}\n${report(run)}`);
    });
    if (exit.code !== 0 || exit.signal !== null) {
      throw new Error(`demo ended with ${JSON.stringify(exit)}\n${report(run)}`);
    }
    // Connection strings carry the demo's passwords: they never reach the output.
    expect(run.stdout() + run.stderr()).not.toMatch(/(mongodb|redis):\/\/[^\s"]*@/);
    const summary = run.stdout().slice(run.stdout().lastIndexOf('Summary'));
    expect(summary).toMatch(/^\s+result\s+: destination equals source$/m);
    expect(summary).toMatch(/^\s+documents compared\s+: [1-9]\d*$/m);
    expect(summary).not.toContain('DIFFERENCES FOUND');
    expect(run.stdout()).toMatch(/COMMITTED: canWrite=true, info="commit completed", lag 0s\./);
    return run.stdout();
  }

  /**
   * A failed run's output, the part that explains it first: stderr (the demo's failure line and
   * each process's last lines), then stdout with consecutive repeated progress lines dropped.
   */
  function report(run: ManagedProcess): string {
    const stdout = run
      .stdout()
      .split('\n')
      .filter((line, i, all) => i === 0 || line !== all[i - 1])
      .join('\n');
    return `stderr:\n${run.stderr()}\nstdout (repeated lines dropped):\n${stdout}`;
  }

  it('default: a sharded migration through the coordinator, one worker per shard', async () => {
    const out = await demo([]);
    expect(out).toMatch(/Worker for shard src-shard0 .*joined through Redis/);
    expect(out).toMatch(/Worker for shard src-shard1 .*joined through Redis/);
    expect(out).toMatch(
      /destination sharded : shop\.customers \{"_id":"hashed"\}, shop\.orders \{"customerId":1\}/,
    );
    expect(out).toMatch(/workers\s+: src-shard0, src-shard1 \(coordinating worker: src-shard0\)/);
  }, 360_000);

  it('--replica-set: the replica set → replica set demo', async () => {
    await demo(['--replica-set']);
  }, 360_000);
});
