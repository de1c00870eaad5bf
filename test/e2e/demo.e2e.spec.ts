import {
  killGroup,
  spawnProcess,
  stopAllProcesses,
  type ManagedProcess,
} from '../helpers/processes';
import { DEMO, buildOnce } from './support/harness';

/**
 * The README's main job (`npm run demo` = build, then `node dist/scripts/demo.js`): a complete
 * migration between two emulated replica sets while an application writes, verified.
 */
describe('demo (npm run demo)', () => {
  beforeAll(() => buildOnce(), 600_000);

  let demo: ManagedProcess | undefined;

  afterAll(async () => {
    // The demo stops its emulators and worker itself; if it died early they would be orphans.
    if (demo) killGroup(demo);
    await stopAllProcesses();
  }, 30_000);

  it('exits 0 and reports that the destination equals the source', async () => {
    const run = spawnProcess('node', [DEMO], {}, { processGroup: true });
    demo = run;
    const exit = await run.waitForExit(300_000).catch(async (error: unknown) => {
      await run.stop();
      throw new Error(`${String(error)}\nstdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`);
    });
    if (exit.code !== 0 || exit.signal !== null) {
      throw new Error(
        `demo ended with ${JSON.stringify(exit)}\nstdout:\n${run.stdout()}\nstderr:\n${run.stderr()}`,
      );
    }
    const summary = run.stdout().slice(run.stdout().lastIndexOf('Summary'));
    expect(summary).toMatch(/^\s+result\s+: destination equals source$/m);
    expect(summary).toMatch(/^\s+documents compared\s+: [1-9]\d*$/m);
    expect(summary).not.toContain('DIFFERENCES FOUND');
    expect(run.stdout()).toMatch(/COMMITTED: canWrite=true, info="commit completed", lag 0s\./);
    // Connection strings carry the demo's passwords: they never reach the output.
    expect(run.stdout() + run.stderr()).not.toMatch(/mongodb:\/\/[^\s"]*@/);
  }, 360_000);
});
