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
