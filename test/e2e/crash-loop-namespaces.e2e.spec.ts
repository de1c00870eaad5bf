import {
  Binary,
  BSONRegExp,
  Decimal128,
  Double,
  Int32,
  Long,
  MaxKey,
  MinKey,
  ObjectId,
  Timestamp,
  type Document,
  type MongoClient,
} from 'mongodb';
import { PER_DATABASE } from '../../scripts/bench/namespaces';
import { compareClusters } from '../../scripts/lib/compare-clusters';
import { rng } from '../../scripts/lib/sample-data';
import { recordOutput } from '../helpers/leak-ledger';
import { stopAllProcesses } from '../helpers/processes';
import { describeOn, testDb } from '../helpers/real-clusters';
import { namespacesOf, RestoreInvariants } from './support/restore-invariants';
import {
  APP,
  SYNCER,
  buildOnce,
  closeClients,
  connect,
  crash,
  outputOf,
  sleep,
  startCluster,
  startWorker,
  type Cluster,
  type Progress,
  type StartedWorker,
  type WorkerApi,
} from './support/harness';

/**
 * The crash loop over a multi-tenant source: N small namespaces (two documents of varied BSON
 * types each, every third collection with a secondary index, a few capped, with a collation or
 * a validator; 500 collections per database, as `npm run bench -- --namespaces N` builds them),
 * and the worker SIGKILLed KILLS times while the copy is under way — kill k at a random point
 * of the k-th of KILLS+1 equal slices of the copy — and restarted each time. Every restore must
 * keep the sync's invariants (and every namespace whose partitions were all copied stays so);
 * after the commit the destination equals the source byte for byte: documents, collection
 * options and indexes, N collections exactly. The worker never prints a password.
 *
 * Acceptance item: "a crash loop of 5 SIGKILLs during a 20,000-namespace copy ends byte-equal":
 * `CRASH_NAMESPACES=20000 npx jest test/e2e/crash-loop-namespaces --runInBand`. Sized for CI by
 * default; CRASH_KILLS and CRASH_SEED as in crash-loop.e2e.spec.ts.
 */
const N = Number(process.env.CRASH_NAMESPACES ?? 2_000);
const KILLS = Number(process.env.CRASH_KILLS ?? 5);
const SEED = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);

/** Time budgets that grow with the namespace count (20,000: a copy of ~100–150 s here). */
const LOAD_MS = 60_000 + N * 10;
const RESTORE_MS = 60_000 + N * 10;
const COPY_MS = 120_000 + N * 20;
const TEST_MS = LOAD_MS + COPY_MS + KILLS * RESTORE_MS + 240_000 + N * 20;

// ------------------------------------------------------------------------------------------------
// The multi-tenant dataset

const DATABASES = Math.ceil(N / PER_DATABASE);
const databaseOf = (i: number): string => testDb(`tenants_${Math.floor(i / PER_DATABASE)}`);
const collectionOf = (i: number): string => `t${i % PER_DATABASE}`;

/** Collection options of namespace i, if any: a few capped, with a collation, validated. */
function optionsOf(i: number): Document | null {
  switch (i % PER_DATABASE) {
    case 7:
      return { capped: true, size: 64 * 1024, max: 100 };
    case 11:
      return { collation: { locale: 'fr', strength: 2 } };
    case 13:
      return { validator: { tenant: { $exists: true } }, validationLevel: 'moderate' };
    default:
      return null;
  }
}

/**
 * The secondary index of every third collection (simple, compound, or unique), and of the
 * collated one: a unique index there lists `unique` before its collation on the source, and
 * after it on the destination once the commit's collMod has made it unique again.
 */
function indexOf(i: number): { key: Document; options: Document } | null {
  if (i % PER_DATABASE === 11)
    return { key: { tenantKey: 1 }, options: { name: 'tenantKey_unique', unique: true } };
  if (i % 3 !== 0) return null;
  switch (i % 9) {
    case 0:
      return { key: { int: 1 }, options: { name: 'int_1' } };
    case 3:
      return { key: { str: 1, date: -1 }, options: { name: 'str_1_date_-1' } };
    default:
      return { key: { tenantKey: 1 }, options: { name: 'tenantKey_unique', unique: true } };
  }
}

/** `_id`s of namespace i's two documents: numbers, strings, ObjectIds or Longs by turn. */
function idsOf(i: number): [unknown, unknown] {
  switch (i % 4) {
    case 0:
      return [new Int32(1), new Int32(2)];
    case 1:
      return [`a${i}`, `b${i}`];
    case 2:
      return [oid(i, 1), oid(i, 2)];
    default:
      return [Long.fromNumber(i * 10 + 1), Long.fromNumber(i * 10 + 2)];
  }
}

const oid = (i: number, k: number): ObjectId =>
  new ObjectId(`65a0${i.toString(16).padStart(12, '0')}${k.toString(16).padStart(8, '0')}`);

function documentsOf(i: number): Document[] {
  const [first, second] = idsOf(i);
  const bytes = Buffer.from([i & 0xff, (i >> 8) & 0xff, 0, 255]);
  return [
    {
      _id: first,
      tenant: i,
      tenantKey: `tenant-${i}-1`,
      int: new Int32(i),
      long: Long.fromNumber(i * 1_000_003),
      double: new Double(i + 0.5),
      negativeZero: new Double(-0),
      dec: Decimal128.fromString(`${i}.250`),
      date: new Date(Date.UTC(2024, 0, 1) + i * 1_000),
      bin: new Binary(bytes),
      uuid: new Binary(Buffer.alloc(16, i & 0xff), Binary.SUBTYPE_UUID),
      str: `tenant ${i} — é ü 日本`,
      bool: i % 2 === 0,
      nil: null,
      ts: new Timestamp({ t: 1_700_000_000 + i, i: 1 }),
      re: new BSONRegExp(`^t${i}`, 'i'),
      arr: [1, 'two', { three: 3 }, [4]],
      nested: { a: { b: { c: i } }, empty: {} },
    },
    {
      _id: second,
      tenant: i,
      tenantKey: `tenant-${i}-2`,
      int: new Int32(-i),
      str: `second of ${i}`,
      date: new Date(Date.UTC(2023, 5, 1) - i * 1_000),
      min: new MinKey(),
      max: new MaxKey(),
      double: new Double(1 / (i + 3)),
      list: [],
      order: { z: 1, a: 2, m: 3 },
    },
  ];
}

/** Creates the N namespaces on `client` (8 at a time); returns the secondary index count. */
async function loadTenants(client: MongoClient): Promise<number> {
  let next = 0;
  let indexes = 0;
  const lane = async () => {
    for (let i = next++; i < N; i = next++) {
      const db = client.db(databaseOf(i));
      const name = collectionOf(i);
      const options = optionsOf(i);
      if (options) await db.createCollection(name, options);
      await db.collection(name).insertMany(documentsOf(i));
      const index = indexOf(i);
      if (index) {
        await db.collection(name).createIndex(index.key, index.options);
        indexes += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return indexes;
}

/** Collections and indexes (`_id` included) in the tenant databases of `client`. */
async function tenantCatalog(
  client: MongoClient,
): Promise<{ collections: number; indexes: number; capped: number; collated: number }> {
  const found = { collections: 0, indexes: 0, capped: 0, collated: 0 };
  const names: Array<[string, string]> = [];
  for (let d = 0; d < DATABASES; d++) {
    const db = testDb(`tenants_${d}`);
    const infos = await client.db(db).listCollections({}, { nameOnly: false }).toArray();
    for (const info of infos) {
      if (info.name.startsWith('system.') || info.type === 'view') continue;
      found.collections += 1;
      if (info.options?.capped === true) found.capped += 1;
      if (info.options?.collation) found.collated += 1;
      names.push([db, info.name]);
    }
  }
  let next = 0;
  const lane = async () => {
    for (let k = next++; k < names.length; k = next++) {
      const [db, name] = names[k]!;
      const specs = await client.db(db).collection(name).listIndexes().toArray();
      found.indexes += specs.length;
    }
  };
  await Promise.all(Array.from({ length: 8 }, lane));
  return found;
}

// ------------------------------------------------------------------------------------------------
// Progress

type Detailed = Progress & Record<string, unknown>;

/** The copy is not done: the catalog is known and not every namespace is copied yet. */
const copying = (p: Progress | null): boolean => {
  const { total, copied } = namespacesOf(p);
  return p !== null && p.state === 'RUNNING' && total > 0 && copied < total;
};

/** Every namespace is copied (or the sync is already past the copy). */
const copyOver = (p: Progress): boolean =>
  p.canCommit || p.state !== 'RUNNING' || !copying(p) || p.info !== 'collection copy';

/** Share of the estimated bytes copied, 0 before the partitions are planned. */
const copiedShare = (p: Progress | null): number => {
  const copy = p?.collectionCopy;
  if (!copy || copy.estimatedTotalBytes <= 1) return 0;
  return copy.estimatedCopiedBytes / copy.estimatedTotalBytes;
};

interface NamespaceDetail {
  state: string;
  partitions: { total: number; done: number };
}

/**
 * Namespaces whose every partition is copied (`GET /progress?detail=namespaces`), or null when
 * the worker did not answer.
 */
async function namespacesFullyCopied(api: WorkerApi): Promise<number | null> {
  try {
    const response = await fetch(`${api.baseUrl}/progress?detail=namespaces`, {
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    recordOutput('response /progress?detail=namespaces', text);
    const detail = (JSON.parse(text) as { progress?: { namespaceDetail?: NamespaceDetail[] } })
      .progress?.namespaceDetail;
    if (!Array.isArray(detail)) return null;
    return detail.filter(
      (n) =>
        n.state === 'copied' ||
        n.state === 'verified' ||
        (n.partitions.total > 0 && n.partitions.done === n.partitions.total),
    ).length;
  } catch {
    return null;
  }
}

const percent = (share: number): string => `${Math.floor(share * 1000) / 10}%`;

interface Kill {
  kill: number;
  /** Kill k waits for the copy to pass this share of the bytes, then for `delayMs`. */
  target: number;
  delayMs: number;
  /** Namespaces with every partition copied, just before the SIGKILL (null: no answer). */
  fullyCopiedAtKill: number | null;
  /** The last progress before the SIGKILL (null: it did not answer). */
  bytesAtKill: number | null;
  copiedAtKill: number | null;
  infoAtKill: string | null;
  duringCopy: boolean;
  /** What the restarted worker restored. */
  fullyCopiedRestored: number | null;
  bytesRestored: number;
  restoreMs: number;
}

describeOn('replicaSets')(
  `crash loop over many namespaces: ${KILLS} SIGKILLs during a ${N}-namespace copy (seed ${SEED})`,
  () => {
    let source: Cluster;
    let destination: Cluster;
    let sourceAdmin: MongoClient;
    let destinationAdmin: MongoClient;
    let worker: StartedWorker;
    const workers: StartedWorker[] = [];
    const random = rng(SEED);
    const kills: Kill[] = [];
    /** What every later restore must not go back on (and exactly N namespaces). */
    const invariants = new RestoreInvariants(N);

    afterAll(async () => {
      await closeClients();
      await stopAllProcesses();
    }, 120_000);

    const launch = async (): Promise<Progress> => {
      worker = await startWorker(source.uriFor(SYNCER), destination.uriFor(SYNCER));
      workers.push(worker);
      return worker.api.waitFor(
        'the worker to restore its job',
        (p) => p.state !== 'INITIALIZING',
        RESTORE_MS,
        20,
      );
    };

    it(
      'ends byte-equal, every namespace with its options and indexes, through every kill',
      async () => {
        buildOnce();
        [source, destination] = await Promise.all([
          startCluster('source', true),
          startCluster('destination', true),
        ]);
        const sourceApp = await connect(source.uriFor(APP));
        [sourceAdmin, destinationAdmin] = await Promise.all([
          connect(source.uriFor(SYNCER)),
          connect(destination.uriFor(SYNCER)),
        ]);
        const loadBegan = Date.now();
        const secondaryIndexes = await loadTenants(sourceApp);
        const loadSeconds = (Date.now() - loadBegan) / 1000;

        await launch();
        const startedAt = Date.now();
        await worker.api.expectSuccess('start', {
          source: 'cluster0',
          destination: 'cluster1',
          enableUserWriteBlocking: true,
        });

        // Kill k at a random point of the k-th slice's first half: once the copy has passed
        // (k + u/2)/(KILLS+1) of the bytes (u uniform in [0, 1); the namespaces are all alike, so
        // bytes go as namespaces), then after a random 0–50 ms. The points are drawn, not timed
        // (the copy's rate changes with every restart), so every kill lands inside the copy —
        // the last one by 91.7% of the bytes at the latest — spread over it.
        const slice = 1 / (KILLS + 1);
        let fullyCopied = 0;
        for (let k = 1; k <= KILLS; k++) {
          const target = (k + random() / 2) * slice;
          await worker.api.waitFor(
            `the copy to pass ${percent(target)} of the bytes`,
            (p) => copiedShare(p) >= target || copyOver(p),
            COPY_MS,
            50,
          );
          const delayMs = Math.floor(random() * 50);
          await sleep(delayMs);
          const [fullyCopiedAtKill, before] = await Promise.all([
            namespacesFullyCopied(worker.api),
            worker.api.progress().catch(() => null),
          ]);
          await crash(worker);
          const restoreBegan = Date.now();
          const restored = (await launch()) as Detailed;
          const restoreMs = Date.now() - restoreBegan;
          invariants.check(restored, k);
          const fullyCopiedRestored = await namespacesFullyCopied(worker.api);
          // Whole partitions stay copied through a kill: the restored job never has fewer
          // namespaces fully copied than the previous one had.
          if (fullyCopiedRestored !== null) {
            expect(fullyCopiedRestored).toBeGreaterThanOrEqual(fullyCopied);
            fullyCopied = fullyCopiedRestored;
          }
          kills.push({
            kill: k,
            target,
            delayMs,
            fullyCopiedAtKill,
            bytesAtKill: before ? copiedShare(before) : null,
            copiedAtKill: before ? namespacesOf(before).copied : null,
            infoAtKill: before?.info ?? null,
            duringCopy: copying(before) && before?.info === 'collection copy',
            fullyCopiedRestored,
            bytesRestored: copiedShare(restored),
            restoreMs,
          });
        }

        // The kill points, logged before the commit (so that a failing commit still shows them).
        const describeKill = (k: Kill): string =>
          `#${k.kill} at ≥${percent(k.target)} +${k.delayMs} ms: ` +
          (k.duringCopy ? '' : `NOT during the copy (${k.infoAtKill ?? 'no answer'}), `) +
          `bytes ${k.bytesAtKill === null ? '?' : percent(k.bytesAtKill)}, ` +
          `namespaces fully copied ${k.fullyCopiedAtKill ?? '?'}/${N} ` +
          `(progress namespaces.copied ${k.copiedAtKill ?? '?'}) → restored in ${k.restoreMs} ms ` +
          `with ${k.fullyCopiedRestored ?? '?'} fully copied, bytes ${percent(k.bytesRestored)}`;
        console.log(
          `[crash-loop-namespaces] seed ${SEED}: ${N} namespaces in ${DATABASES} databases ` +
            `(loaded in ${loadSeconds.toFixed(1)} s); ${kills.filter((k) => k.duringCopy).length} ` +
            `of ${KILLS} kills landed during the copy, the last one ` +
            `${((Date.now() - startedAt) / 1000).toFixed(1)} s after start:\n  ` +
            kills.map(describeKill).join('\n  '),
        );

        const ready = await worker.api.waitFor('canCommit', (p) => p.canCommit, COPY_MS, 200);
        invariants.check(ready as Detailed, KILLS);
        const canCommitSeconds = (Date.now() - startedAt) / 1000;
        console.log(
          `[crash-loop-namespaces] seed ${SEED}: start → canCommit ${canCommitSeconds.toFixed(1)} s`,
        );
        await worker.api.expectSuccess('commit');
        invariants.commitRequested = true;
        // Stops early on a commit that failed or rolled back (the sync then runs on, RUNNING).
        const committed = (await worker.api.waitFor(
          'COMMITTED',
          (p) => {
            const detail = p as Detailed;
            const warnings = (detail.warnings as string[] | undefined) ?? [];
            return (
              p.state === 'COMMITTED' ||
              detail.commitFailure !== undefined ||
              warnings.some((w) => w.startsWith('CommitRolledBack'))
            );
          },
          120_000 + N * 5,
          100,
        )) as Detailed;
        if (committed.state !== 'COMMITTED')
          throw new Error(`the commit did not complete: ${JSON.stringify(committed)}`);
        invariants.check(committed, KILLS);
        console.log(
          `[crash-loop-namespaces] seed ${SEED}: start → COMMITTED ` +
            `${((Date.now() - startedAt) / 1000).toFixed(1)} s`,
        );

        expect(kills).toHaveLength(KILLS);
        // every kill landed while the copy was not done
        expect(kills.filter((k) => !k.duringCopy)).toEqual([]);

        const report = await compareClusters(sourceAdmin, destinationAdmin, {
          compareUnique: true,
        });
        expect(report.differences).toEqual([]);
        expect(report.namespaces).toBe(N);
        expect(report.documents).toBe(2 * N);
        expect(report.indexes).toBe(N + secondaryIndexes);

        // The destination holds exactly the N collections, with their options and indexes.
        const special = (k: number) =>
          Array.from({ length: N }, (_, i) => i).filter((i) => i % PER_DATABASE === k).length;
        expect(await tenantCatalog(destinationAdmin)).toEqual({
          collections: N,
          indexes: N + secondaryIndexes,
          capped: special(7),
          collated: special(11),
        });

        for (const w of workers) {
          expect(outputOf(w)).not.toContain(SYNCER.password);
          expect(outputOf(w)).not.toContain(APP.password);
        }
      },
      TEST_MS,
    );
  },
);
