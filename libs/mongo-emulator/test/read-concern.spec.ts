import {
  Binary,
  type CommandStartedEvent,
  type Db,
  type Document,
  Long,
  type MongoClient,
  Timestamp,
} from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { withoutAccessControl } from './helpers/real-server';

interface TestDoc {
  _id: number | string;
  [key: string]: unknown;
}

/**
 * readConcern afterClusterTime (mongod's waitForReadConcern, read_concern_mongod.cpp) and the
 * `$clusterTime` gossip that makes it useful (VectorClock::gossipIn).
 */
describe('readConcern afterClusterTime and causal consistency', () => {
  let cluster: TestCluster;
  let client: MongoClient;
  let db: Db;
  const started: CommandStartedEvent[] = [];

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect({ monitorCommands: true, retryReads: false });
    client.on('commandStarted', (e) => started.push(e));
  });
  afterAll(() => cluster.close());
  beforeEach(async () => {
    started.length = 0;
    db = client.db(cluster.dbName(`rc_${Math.random().toString(36).slice(2, 8)}`));
  });

  const clusterTime = () => cluster.clusterTime(client);
  const plus = (ts: Timestamp, secs: number) => new Timestamp({ t: ts.high + secs, i: 1 });

  it('accepts majority and local reads after an operation time the node has reached', async () => {
    const res = await db.command({ insert: 'c', documents: [{ _id: 1 }] });
    const at = res.operationTime as Timestamp;
    for (const level of ['majority', 'local', 'snapshot']) {
      const found = await db.command({
        find: 'c',
        readConcern: { level, afterClusterTime: at },
      });
      expect(found.cursor.firstBatch).toEqual([{ _id: 1 }]);
    }
    const n = await db.command({
      count: 'c',
      readConcern: { level: 'majority', afterClusterTime: at },
    });
    expect(n.n).toBe(1);
  });

  it('a causally consistent session sends afterClusterTime after advanceOperationTime', async () => {
    const write = await db.command({ insert: 'c', documents: [{ _id: 1 }, { _id: 2 }] });
    const session = client.startSession({ causalConsistency: true });
    try {
      session.advanceOperationTime(write.operationTime as Timestamp);
      const docs = await db
        .collection('c')
        .find({}, { session, readConcern: { level: 'majority' } })
        .toArray();
      expect(docs).toEqual([{ _id: 1 }, { _id: 2 }]);
      const find = started.find((e) => e.commandName === 'find');
      expect(find?.command.readConcern).toEqual({
        level: 'majority',
        afterClusterTime: write.operationTime,
      });
      // The session's operation time now follows the server's reply.
      expect(session.operationTime).toBeDefined();
    } finally {
      await session.endSession();
    }
  });

  it('fails with 72 InvalidOptions for a time beyond the cluster time', async () => {
    const now = await clusterTime();
    const ahead = plus(now, 100);
    const err = await db
      .command({ find: 'c', readConcern: { level: 'majority', afterClusterTime: ahead } })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 72,
      codeName: 'InvalidOptions',
    });
    expect((err as Error).message).toMatch(
      new RegExp(
        `^readConcern afterClusterTime value must not be greater than the current clusterTime\\. ` +
          `Requested clusterTime: \\{ ts: Timestamp\\(${ahead.high}, 1\\) \\}; current clusterTime: \\{ ts: Timestamp\\(\\d+, \\d+\\) \\}$`,
      ),
    );
  });

  const unsignedGossip = withoutAccessControl('gossips an unsigned $clusterTime');

  unsignedGossip(
    'a gossiped $clusterTime moves the clock, and the read waits for a no-op write to reach it',
    async () => {
      await db.collection<TestDoc>('c').insertOne({ _id: 1 });
      const ahead = plus(await clusterTime(), 5);
      const session = client.startSession({ causalConsistency: true });
      try {
        session.advanceClusterTime({
          clusterTime: ahead,
          signature: { hash: new Binary(Buffer.alloc(20), 0), keyId: Long.ZERO },
        });
        session.advanceOperationTime(ahead);
        const docs = await db
          .collection('c')
          .find({}, { session, readConcern: { level: 'majority' } })
          .toArray();
        expect(docs).toEqual([{ _id: 1 }]);
        const [noop] = await client
          .db('local')
          .collection('oplog.rs')
          .find({ op: 'n', 'o.noop write for afterClusterTime read concern': 1 })
          .sort({ $natural: -1 })
          .limit(1)
          .toArray();
        expect(noop).toMatchObject({
          op: 'n',
          o: { 'noop write for afterClusterTime read concern': 1 },
        });
        expect(noop!.ts.greaterThan(ahead)).toBe(true);
        expect(session.operationTime!.greaterThanOrEqual(ahead)).toBe(true);
      } finally {
        await session.endSession();
      }
    },
  );

  unsignedGossip(
    'rejects a gossiped $clusterTime more than a year ahead of the wall clock (205)',
    async () => {
      const farAhead = new Timestamp({ t: Math.floor(Date.now() / 1000) + 2 * 365 * 86400, i: 1 });
      const session = client.startSession({ causalConsistency: true });
      try {
        session.advanceClusterTime({
          clusterTime: farAhead,
          signature: { hash: new Binary(Buffer.alloc(20), 0), keyId: Long.ZERO },
        });
        const err = await db.command({ ping: 1 }, { session }).catch((e: unknown) => e);
        expect(err).toMatchObject({ code: 205, codeName: 'ClusterTimeFailsRateLimiter' });
        expect((err as Error).message).toMatch(
          new RegExp(
            `^New \\$clusterTime, ${farAhead.high}, is too far from this node's wall clock time, \\d+\\.$`,
          ),
        );
      } finally {
        await session.endSession();
      }
      // The clock did not move.
      expect((await clusterTime()).lessThan(farAhead)).toBe(true);
    },
  );

  it('validates readConcern like ReadConcernArgs', async () => {
    await expect(db.command({ find: 'c', readConcern: { level: 'bogus' } })).rejects.toMatchObject({
      code: 9,
    });
    await expect(
      db.command({
        find: 'c',
        readConcern: { level: 'available', afterClusterTime: await clusterTime() },
      }),
    ).rejects.toMatchObject({
      code: 72,
      message:
        'afterClusterTime field can be set only if level is equal to majority, local, or snapshot',
    });
    await expect(
      db.command({ find: 'c', readConcern: { afterClusterTime: new Timestamp({ t: 0, i: 0 }) } }),
    ).rejects.toMatchObject({ code: 72, message: 'afterClusterTime cannot be a null timestamp' });
    await expect(
      db.command({ find: 'c', readConcern: { level: 'majority', bogus: 1 } as Document }),
    ).rejects.toMatchObject({ code: 72, message: 'Unrecognized option in readConcern: bogus' });
  });
});
