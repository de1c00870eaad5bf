import { Binary, Decimal128, Double, Int32, Long, ObjectId, type MongoClient } from 'mongodb';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { spawnProcess, stopAllProcesses } from '../helpers/processes';
import { describeOn, emulatorOnly, testDb, testNs } from '../helpers/real-clusters';
import {
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  copyDone,
  copyFiguresDone,
  countAll,
  crash,
  midCopy,
  outputOf,
  startCluster,
  startWorker,
  workerArgs,
  WorkerApi,
  sleep,
  type Cluster,
  type StartedWorker,
} from './support/harness';

/**
 * Issue 3: a worker killed (SIGKILL) in the middle of the collection copy and restarted with the
 * same clusters resumes the job (RUNNING, not IDLE) and ends with every source document on the
 * destination exactly once. A worker launched against the destination with other clusters
 * refuses to resume the job, and never prints a connection string.
 */

/** Small documents in several collections of two databases: 60,000 in total. */
const COLLECTIONS: Record<string, number> = {
  'inventory.items': 20_000,
  'inventory.movements': 20_000,
  'crm.contacts': 15_000,
  'crm.notes': 5_000,
};

async function loadSource(client: MongoClient): Promise<void> {
  await client
    .db(testDb('crm'))
    .collection('contacts')
    .createIndex({ email: 1 }, { unique: true, name: 'email_unique' });
  await client.db(testDb('inventory')).collection('items').createIndex({ sku: 1, warehouse: -1 });
  for (const [ns, count] of Object.entries(COLLECTIONS)) {
    const [db, coll] = testNs(ns).split('.');
    for (let start = 0; start < count; start += 2_000) {
      const docs = Array.from({ length: Math.min(2_000, count - start) }, (_, k) =>
        makeDoc(ns, start + k),
      );
      await client.db(db!).collection(coll!).insertMany(docs, { ordered: false });
    }
  }
}

function makeDoc(ns: string, i: number): Record<string, unknown> {
  switch (ns) {
    case 'inventory.items':
      return {
        _id: new Int32(i),
        sku: `SKU-${i % 3_000}`,
        warehouse: `W${i % 7}`,
        qty: new Long(i * 3),
        price: Decimal128.fromString(`${i % 500}.${String(i % 100).padStart(2, '0')}`),
      };
    case 'inventory.movements':
      return {
        _id: new ObjectId(),
        item: new Int32(i % 20_000),
        delta: new Double(i % 2 ? 1 : -1),
      };
    case 'crm.contacts':
      return { _id: `contact-${i}`, email: `c${i}@example.com`, tags: i % 3 ? ['a'] : [] };
    default:
      return { _id: new Long(i), body: `note ${i}`, blob: new Binary(Buffer.from([i % 256]), 0) };
  }
}

describeOn('replicaSets')('worker crash during the collection copy (issue 3)', () => {
  let source: Cluster;
  let destination: Cluster;
  let sourceClient: MongoClient;
  let destinationClient: MongoClient;
  let sourceCounts: Record<string, number>;
  const workers: StartedWorker[] = [];

  beforeAll(async () => {
    buildOnce();
    [source, destination] = await Promise.all([
      startCluster('source', true),
      startCluster('destination', true),
    ]);
    sourceClient = await connect(source.uriFor(SYNCER));
    destinationClient = await connect(destination.uriFor(SYNCER));
    await loadSource(sourceClient);
    sourceCounts = await countAll(sourceClient);
  }, 300_000);

  afterAll(async () => {
    await closeClients();
    await stopAllProcesses();
  }, 60_000);

  it('resumes after SIGKILL mid-copy and copies every document exactly once', async () => {
    expect(Object.values(sourceCounts).reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(50_000);
    const first = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    workers.push(first);
    await first.api.waitFor('IDLE after boot', (p) => p.state === 'IDLE', 60_000);
    await first.api.expectSuccess('start', { source: 'cluster0', destination: 'cluster1' });

    // Kill as soon as part, but not all, of the data is copied.
    const atKill = await first.api.waitFor(
      'a third of the copy',
      (p) =>
        midCopy(p) &&
        p.collectionCopy!.estimatedCopiedBytes * 3 >= p.collectionCopy!.estimatedTotalBytes,
      120_000,
      20,
    );
    await crash(first);
    const { estimatedCopiedBytes, estimatedTotalBytes } = atKill.collectionCopy!;
    process.stdout.write(`killed at ${estimatedCopiedBytes}/${estimatedTotalBytes} bytes\n`);
    // Nothing the dead worker wrote may contain a credential.
    expect(outputOf(first)).not.toContain(SYNCER.password);

    const second = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    workers.push(second);
    const restored = await second.api.waitFor(
      'the persisted job to be restored',
      (p) => p.state !== 'INITIALIZING',
      120_000,
    );
    expect(restored.state).toBe('RUNNING');
    expect(restored.directionMapping).toEqual({
      Source: expect.stringMatching(/^cluster0: [\w.-]+:\d+$/),
      Destination: expect.stringMatching(/^cluster1: [\w.-]+:\d+$/),
    });

    await second.api.waitFor('the copy figures to reach 100%', copyFiguresDone, 180_000);
    // The copy is over once info moves on to change event application.
    const done = await second.api.waitFor('the end of the copy', copyDone, 60_000);
    expect(done.state).toBe('RUNNING');
    expect(done.collectionCopy!.estimatedCopiedBytes).toBeGreaterThan(0);

    // Every document exactly once: the same counts, then the same documents byte for byte.
    expect(await countAll(destinationClient)).toEqual(sourceCounts);
    const report = await compareClusters(sourceClient, destinationClient, {
      compareUnique: false, // unique indexes stay relaxed until commit
    });
    expect(report.differences).toEqual([]);
    expect(report.documents).toBe(Object.values(sourceCounts).reduce((a, b) => a + b, 0));
    expect(outputOf(second)).not.toContain(SYNCER.password);
    await second.process.stop();
  }, 420_000);

  /** Progress answers 409 JobClusterMismatch (after NotReady while it boots). */
  async function waitForRefusal(worker: ReturnType<typeof spawnProcess>): Promise<void> {
    const listening = await worker.waitForJsonLine((record) => record.msg === 'worker listening');
    const api = new WorkerApi(listening.url as string);
    const deadline = Date.now() + 60_000;
    for (;;) {
      const result = await api.progressResult();
      if (result.body.error === 'JobClusterMismatch') {
        expect(result.status).toBe(409);
        const start = await api.post('start', { source: 'cluster0', destination: 'cluster1' });
        expect(start.body.error).toBe('JobClusterMismatch');
        return;
      }
      if (Date.now() > deadline) throw new Error(`no refusal: ${JSON.stringify(result)}`);
      await sleep(100);
    }
  }

  /**
   * A worker launched with other clusters refuses to resume the job, and says so without
   * printing credentials; the original clusters still resume it afterwards.
   */
  async function expectRefusal(cluster0: string, cluster1: string): Promise<void> {
    const worker = spawnProcess('node', workerArgs(cluster0, cluster1));
    // The worker stays up and every call answers the refusal (the job is untouched).
    await waitForRefusal(worker);
    await worker.stop();

    const output = worker.stdout() + worker.stderr();
    const records = worker.stdoutLines.map((line) => JSON.parse(line) as Record<string, any>);
    // One line names the error and says what was refused; nothing is FATAL.
    const refused = records.filter((r) => r.level === 'ERROR' && r.error === 'JobClusterMismatch');
    expect(refused).toEqual([
      expect.objectContaining({
        msg: 'cannot resume the persisted sync',
        description: expect.stringMatching(/refusing to resume it/),
      }),
    ]);
    expect(records.filter((r) => r.level === 'FATAL')).toEqual([]);
    for (const uri of [cluster0, cluster1]) expect(output).not.toContain(uri);
    expect(output).not.toContain(SYNCER.password);
    expect(output).not.toMatch(/mongodb:\/\/[^\s"]*@/);

    // The refused launch changed nothing: the original clusters still resume the job.
    const again = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
    const restored = await again.api.waitFor(
      'the job to be restored',
      (p) => p.state !== 'INITIALIZING',
      120_000,
    );
    expect(restored.state).toBe('RUNNING');
    await again.process.stop();
  }

  emulatorOnly('a third cluster: another source')(
    'refuses to resume the job with another source cluster (JobClusterMismatch), without printing credentials',
    async () => {
      // Same replica-set name as the original source, on another host:port.
      const other = await startCluster('source', true);
      await expectRefusal(other.uriFor(SYNCER), destination.uriFor(SYNCER));
    },
    240_000,
  );

  it('refuses to resume the job with the clusters swapped (JobClusterMismatch), without printing credentials', async () => {
    await expectRefusal(destination.uriFor(SYNCER), source.uriFor(SYNCER));
  }, 240_000);
});
