import { MongoClient } from 'mongodb';
import type { CommandDefinition } from '../src';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

/**
 * A stand-in `insert` (the real one belongs to the storage work): write blocking and the
 * `insert` privilege are checked by the dispatcher before any command runs.
 */
const probe: CommandDefinition = {
  name: 'insert',
  access: 'write',
  userWrite: true,
  run: () => ({ ok: 1 }),
};
function addProbe(cluster: TestCluster): void {
  (cluster.rs.node.commands as unknown as { byName: Map<string, CommandDefinition> }).byName.set(
    probe.name,
    probe,
  );
}

/**
 * Turning write blocking on would stop the writes of every other client of a shared real server,
 * and the suites below need users created at launch or a probe command: only the validation
 * suite at the end runs on a real server.
 */
const blocking = describeEmulatorOnly(
  'users created at launch, a probe command, and blocking writes server-wide',
);

blocking('setUserWriteBlockMode with authentication', () => {
  let cluster: TestCluster;
  let root: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start({
      users: [
        { user: 'root', password: 'pw', roles: ['root'] },
        { user: 'app', password: 'pw', roles: ['readWriteAnyDatabase'] },
        { user: 'sync', password: 'pw', roles: ['restore'] },
        { user: 'bk', password: 'pw', roles: ['backup'] },
      ],
    });
    addProbe(cluster);
    root = await cluster.connect({ user: 'root', password: 'pw' });
  });
  afterAll(() => cluster.close());

  it('blocks ordinary users and lets root and restore through', async () => {
    const app = await cluster.connect({ user: 'app', password: 'pw' });
    const sync = await cluster.connect({ user: 'sync', password: 'pw' });
    await expect(app.db('shop').command({ insert: 'c' })).resolves.toMatchObject({ ok: 1 });

    await expect(
      app.db('admin').command({ setUserWriteBlockMode: 1, global: true }),
    ).rejects.toMatchObject({ code: 13 });
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    try {
      await expect(app.db('shop').command({ insert: 'c' })).rejects.toMatchObject({
        code: 371,
        codeName: 'UserWritesBlocked',
        message: 'User writes blocked',
      });
      // Internal databases are never blocked.
      await expect(app.db('config').command({ insert: 'c' })).rejects.toMatchObject({ code: 13 });
      await expect(root.db('shop').command({ insert: 'c' })).resolves.toMatchObject({ ok: 1 });
      await expect(sync.db('shop').command({ insert: 'c' })).resolves.toMatchObject({ ok: 1 });
    } finally {
      await root.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
    await expect(app.db('shop').command({ insert: 'c' })).resolves.toMatchObject({ ok: 1 });
  });

  it('backup may set the mode but not bypass it', async () => {
    const bk = await cluster.connect({ user: 'bk', password: 'pw' });
    await bk.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    try {
      expect(cluster.rs.node.userWriteBlocking).toBe(true);
    } finally {
      await bk.db('admin').command({ setUserWriteBlockMode: 1, global: false });
    }
  });

  it('validates the command', async () => {
    await expect(root.db('admin').command({ setUserWriteBlockMode: 1 })).rejects.toMatchObject({
      code: 40414,
    });
    await expect(
      root.db('shop').command({ setUserWriteBlockMode: 1, global: true }),
    ).rejects.toMatchObject({
      code: 13,
      message: 'setUserWriteBlockMode may only be run against the admin database.',
    });
  });
});

blocking('setUserWriteBlockMode without authentication', () => {
  it('every client bypasses, as in mongod without access control', async () => {
    const cluster = await TestCluster.start();
    try {
      addProbe(cluster);
      const client = await cluster.connect();
      await client.db('admin').command({ setUserWriteBlockMode: 1, global: true });
      expect(cluster.rs.node.userWriteBlocking).toBe(true);
      await expect(client.db('shop').command({ insert: 'c' })).resolves.toMatchObject({ ok: 1 });
    } finally {
      await cluster.close();
    }
  });
});

describe('setUserWriteBlockMode: refused requests change nothing', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start();
    client = await cluster.connect();
  });
  afterAll(() => cluster.close());

  it('requires global and the admin database', async () => {
    await expect(client.db('admin').command({ setUserWriteBlockMode: 1 })).rejects.toMatchObject({
      code: 40414,
    });
    await expect(
      client.db(cluster.dbName('shop')).command({ setUserWriteBlockMode: 1, global: true }),
    ).rejects.toMatchObject({
      code: 13,
      message: 'setUserWriteBlockMode may only be run against the admin database.',
    });
  });
});

/**
 * mongod enables the block under the global lock in MODE_X "to ensure that any ongoing writes
 * have completed" (user_writes_recoverable_critical_section_service.cpp). An open transaction
 * holds its intent locks from its first statement to its commit or abort, so the command waits
 * for every transaction open when it arrives; their statements and commit still run meanwhile
 * (the block is not on yet), and once it replies no transaction of before can commit any more:
 * a no-op written after the reply (a commit point) follows every committed transaction.
 */
blocking('setUserWriteBlockMode and open transactions', () => {
  let cluster: TestCluster;
  let root: MongoClient;
  let app: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start({
      transactionLifetimeLimitSeconds: 2,
      users: [
        { user: 'root', password: 'pw', roles: ['root'] },
        { user: 'app', password: 'pw', roles: ['readWriteAnyDatabase'] },
      ],
    });
    root = await cluster.connect({ user: 'root', password: 'pw' });
    app = await cluster.connect({ user: 'app', password: 'pw' });
  });
  afterAll(() => cluster.close());
  afterEach(() => root.db('admin').command({ setUserWriteBlockMode: 1, global: false }));

  const settled = async (p: Promise<unknown>, ms: number): Promise<boolean> =>
    Promise.race([
      p.then(
        () => true,
        () => true,
      ),
      new Promise<boolean>((r) => setTimeout(() => r(false), ms)),
    ]);

  it('waits for an open transaction, which may still write and commit, before the block is on', async () => {
    const orders = app.db('txblock').collection<{ _id: number; n?: number }>('orders');
    const session = app.startSession();
    session.startTransaction();
    await orders.insertOne({ _id: 1 }, { session });
    const block = root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    expect(await settled(block, 300)).toBe(false);
    // The transaction's next statement and its commit run: the block is not on yet.
    await orders.updateOne({ _id: 1 }, { $set: { n: 1 } }, { session });
    await session.commitTransaction();
    await session.endSession();
    await expect(block).resolves.toMatchObject({ ok: 1 });
    // Now on: a new transaction's write is refused.
    const late = app.startSession();
    late.startTransaction();
    await expect(orders.insertOne({ _id: 2 }, { session: late })).rejects.toMatchObject({
      codeName: 'UserWritesBlocked',
    });
    await late.endSession();
    // The commit point taken after the reply follows the transaction's commit.
    await root.db('admin').command({ appendOplogNote: 1, data: { msg: 'point' } });
    const oplog = await root
      .db('local')
      .collection('oplog.rs')
      .find({ $or: [{ 'o.applyOps.ns': 'txblock.orders' }, { 'o.msg': 'point' }] })
      .toArray();
    expect(oplog.map((e) => (e.o.msg === 'point' ? 'point' : 'commit'))).toEqual([
      'commit',
      'point',
    ]);
    expect(await orders.findOne({ _id: 1 })).toEqual({ _id: 1, n: 1 });
  });

  it('waits for an abandoned transaction until transactionLifetimeLimitSeconds aborts it', async () => {
    const orders = app.db('txblock').collection<{ _id: number }>('abandoned');
    const session = app.startSession();
    session.startTransaction();
    await orders.insertOne({ _id: 1 }, { session });
    const started = Date.now();
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    expect(Date.now() - started).toBeGreaterThan(500);
    await expect(session.commitTransaction()).rejects.toMatchObject({
      codeName: 'NoSuchTransaction',
    });
    await session.endSession();
    expect(await orders.countDocuments()).toBe(0);
  });

  it('gives up at maxTimeMS and leaves writes unblocked', async () => {
    const orders = app.db('txblock').collection<{ _id: number }>('timeout');
    const session = app.startSession();
    session.startTransaction();
    await orders.insertOne({ _id: 1 }, { session });
    await expect(
      root.db('admin').command({ setUserWriteBlockMode: 1, global: true, maxTimeMS: 100 }),
    ).rejects.toMatchObject({ codeName: 'MaxTimeMSExpired' });
    expect(cluster.rs.node.userWriteBlocking).toBe(false);
    await session.commitTransaction();
    await session.endSession();
    await orders.insertOne({ _id: 2 });
    expect(await orders.countDocuments()).toBe(2);
  });

  it('replies at once when no transaction is open or the block is already on', async () => {
    const started = Date.now();
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    await root.db('admin').command({ setUserWriteBlockMode: 1, global: true });
    expect(Date.now() - started).toBeLessThan(500);
  });
});
