/**
 * (j) The cutover, measured as an operator lives it: an application writes to the source every
 * 20 ms from before `start` until the source refuses it; the sync runs with the embedded
 * verifier; `commit` is sent once `canCommit` is true. The downtime is from the application's
 * first refused write to the first `progress` answer with `canWrite: true` (when the
 * application may write to the destination).
 *
 * Authentication is on in both clusters: the worker connects as a root user (it may bypass
 * write blocking, which it needs to finish the commit), the application as a readWrite user
 * (it may not, as in production; without access control every client bypasses the block).
 */
import { MongoClient, type Document } from 'mongodb';
import { insertRange, type DatasetSpec } from './dataset';
import { memoryOf, RssSampler, sleep, startEmulator, startWorker } from './processes';
import { post, progress } from './worker-copy';

const SYNC_USER = { name: 'bench-sync', password: 'bench-sync-pw' };
const APP_USER = { name: 'bench-app', password: 'bench-app-pw' };
const APP_INTERVAL_MS = 20;

export interface CutoverRun {
  documents: number;
  verification: boolean;
  /** `POST /start` to the first progress answer with canCommit: true. */
  startToCanCommitSeconds: number;
  /** First refused application write → first progress with canWrite: true (null: no commit). */
  cutoverSeconds: number | null;
  /** The worker's own measure (progress.commit.cutoverSeconds). */
  reportedCutoverSeconds: number | null;
  /** The verifier's final pass (progress.verification.finalPass). */
  finalPass: { mode: string; documentsRead: number; ms: number } | null;
  /** Worker peak resident memory (VmHWM), MB. */
  peakRssMB: number;
  appWrites: number;
}

function withUser(uri: string, user: { name: string; password: string }): string {
  const url = new URL(uri);
  url.username = encodeURIComponent(user.name);
  url.password = encodeURIComponent(user.password);
  url.searchParams.set('authSource', 'admin');
  return url.toString();
}

/** An application inserting one small document every 20 ms until the source refuses it. */
class Application {
  writes = 0;
  refusedAt: number | null = null;
  lastError: string | null = null;
  private stopped = false;
  private loop: Promise<void> | null = null;

  constructor(private readonly client: MongoClient) {}

  start(): void {
    const coll = this.client.db('bench_app').collection('events');
    this.loop = (async () => {
      while (!this.stopped && this.refusedAt === null) {
        const began = Date.now();
        try {
          await coll.insertOne({ seq: this.writes, at: new Date() });
          this.writes += 1;
        } catch (error) {
          const e = error as { codeName?: string; message?: string };
          if (e.codeName === 'UserWritesBlocked' || /blocked/i.test(e.message ?? '')) {
            this.refusedAt = began;
          } else this.lastError = e.message ?? String(error);
        }
        await sleep(Math.max(0, APP_INTERVAL_MS - (Date.now() - began)));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.loop;
  }
}

export async function measureCutover(
  spec: DatasetSpec,
  documents: number,
  options: {
    verification: boolean;
    commit: boolean;
    profileDir: string | null;
    tag: string;
    timeoutMs: number;
    log: (line: string) => void;
  },
): Promise<CutoverRun> {
  const users = [
    '--user',
    `${SYNC_USER.name}:${SYNC_USER.password}:root`,
    '--user',
    `${APP_USER.name}:${APP_USER.password}:readWriteAnyDatabase`,
  ];
  const source = await startEmulator(`cutover-source-${options.tag}`, options.profileDir, users);
  const destination = await startEmulator(
    `cutover-destination-${options.tag}`,
    options.profileDir,
    users,
  );
  const sourceUri = withUser(source.firstLine.uri, SYNC_USER);
  const loader = await MongoClient.connect(sourceUri);
  const appClient = await MongoClient.connect(withUser(source.firstLine.uri, APP_USER));
  const app = new Application(appClient);
  try {
    await insertRange(loader, spec.database, { ...spec, documents }, 0, documents, {
      batchSize: 1_000,
      concurrency: 4,
      exactSizes: true,
    });
    app.start();
    const worker = await startWorker(
      sourceUri,
      withUser(destination.firstLine.uri, SYNC_USER),
      options.profileDir,
      `cutover-${options.tag}`,
    );
    const sampler = new RssSampler(worker.started.child, 100);
    const startedAt = Date.now();
    await post(worker.api, 'start', {
      source: 'cluster0',
      destination: 'cluster1',
      enableUserWriteBlocking: true,
      ...(options.verification ? {} : { verification: { enabled: false } }),
    });
    const deadline = startedAt + options.timeoutMs;
    let ready: number | null = null;
    while (ready === null) {
      const p = await progress(worker.api);
      if (p.canCommit) ready = Date.now();
      else if (Date.now() > deadline) throw new Error(`no canCommit in ${options.timeoutMs} ms`);
      else await sleep(100);
    }
    const run: CutoverRun = {
      documents,
      verification: options.verification,
      startToCanCommitSeconds: round((ready - startedAt) / 1000),
      cutoverSeconds: null,
      reportedCutoverSeconds: null,
      finalPass: null,
      peakRssMB: 0,
      appWrites: 0,
    };
    if (options.commit) {
      await post(worker.api, 'commit', {});
      let writable: number | null = null;
      let last: Document = {};
      while (writable === null) {
        last = (await progress(worker.api)) as unknown as Document;
        if (last.canWrite === true) writable = Date.now();
        else if (Date.now() > deadline) throw new Error(`commit not done: ${JSON.stringify(last)}`);
        else await sleep(50);
      }
      if (app.refusedAt === null) {
        throw new Error(`the application was never refused (${app.lastError ?? 'no error'})`);
      }
      run.cutoverSeconds = round((writable - app.refusedAt) / 1000);
      const commit = last.commit as { cutoverSeconds?: number } | undefined;
      run.reportedCutoverSeconds = commit?.cutoverSeconds ?? null;
      const verification = last.verification as { finalPass?: CutoverRun['finalPass'] } | undefined;
      if (verification?.finalPass) {
        const { mode, documentsRead, ms } = verification.finalPass;
        run.finalPass = { mode, documentsRead, ms };
      }
    }
    sampler.stop();
    run.peakRssMB = round(memoryOf(worker.started.child)?.hwmMB ?? 0);
    run.appWrites = app.writes;
    options.log(
      `  ${documents} documents, verification ${options.verification ? 'on' : 'off'}: canCommit after ${run.startToCanCommitSeconds} s` +
        (run.cutoverSeconds !== null
          ? `, cutover ${run.cutoverSeconds} s (worker says ${run.reportedCutoverSeconds} s; final pass read ${run.finalPass?.documentsRead ?? '?'} documents in ${run.finalPass?.ms ?? '?'} ms)`
          : '') +
        `, peak RSS ${run.peakRssMB} MB`,
    );
    await worker.started.stop();
    return run;
  } finally {
    await app.stop();
    await Promise.all([loader.close(), appClient.close()]);
    await Promise.all([source.stop(), destination.stop()]);
  }
}

export interface CutoverResult {
  at1x: CutoverRun;
  at4x: CutoverRun | null;
  withoutVerification: CutoverRun;
  cutoverSeconds: number | null;
  cutoverSeconds4x: number | null;
  cutoverGrowth4x: number | null;
  /** start → canCommit with verification ÷ without, at 1×. */
  verificationTimeRatio: number;
  /** Worker peak RSS with verification − without, at 1×, MB. */
  verificationRssDeltaMB: number;
}

export const CUTOVER_TARGETS = {
  cutoverSeconds: 2,
  cutoverSeconds4x: 3,
  cutoverGrowth4x: 1.5,
  verificationTimeRatio: 1.1,
  verificationRssDeltaMB: 50,
};

/** The three runs: 1× and 4× with verification and a commit, 1× without verification. */
export async function runCutoverPhase(
  spec: DatasetSpec,
  options: {
    scale: number;
    skipScaling: boolean;
    profileDir: string | null;
    timeoutMs: number;
    log: (line: string) => void;
  },
): Promise<CutoverResult> {
  options.log('(j) cutover: an application writing every 20 ms, verification on, commit…');
  const common = { profileDir: options.profileDir, timeoutMs: options.timeoutMs, log: options.log };
  const without = await measureCutover(spec, spec.documents, {
    ...common,
    verification: false,
    commit: false,
    tag: '1x-noverify',
  });
  const at1x = await measureCutover(spec, spec.documents, {
    ...common,
    verification: true,
    commit: true,
    tag: '1x',
  });
  const at4x = options.skipScaling
    ? null
    : await measureCutover(spec, Math.round(spec.documents * options.scale), {
        ...common,
        verification: true,
        commit: true,
        tag: `${options.scale}x`,
      });
  const c1 = at1x.cutoverSeconds;
  const c4 = at4x?.cutoverSeconds ?? null;
  return {
    at1x,
    at4x,
    withoutVerification: without,
    cutoverSeconds: c1,
    cutoverSeconds4x: c4,
    cutoverGrowth4x: c1 !== null && c4 !== null && c1 > 0 ? round(c4 / c1) : null,
    verificationTimeRatio: round(at1x.startToCanCommitSeconds / without.startToCanCommitSeconds),
    verificationRssDeltaMB: round(Math.max(0, at1x.peakRssMB - without.peakRssMB)),
  };
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}
