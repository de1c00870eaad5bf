import type { MongoClient, TopologyDescription } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

/** The driver's SDAM state (`MongoClient.topology` is internal API, absent from the typings). */
function topologyOf(client: MongoClient): { description: TopologyDescription } {
  return (client as unknown as { topology: { description: TopologyDescription } }).topology;
}

const suite = describeEmulatorOnly("the emulator's own set name, port, noop interval and oplog");

suite('handshake and topology', () => {
  let cluster: TestCluster;

  beforeAll(async () => {
    cluster = await TestCluster.start({ name: 'rsHandshake' });
  });
  afterAll(() => cluster.close());

  it('the driver sees a replica set with a primary', async () => {
    const client = await cluster.connect();
    const description = topologyOf(client).description;
    expect(description.type).toBe('ReplicaSetWithPrimary');
    expect(description.setName).toBe('rsHandshake');
    const server = [...description.servers.values()][0];
    expect(server.type).toBe('RSPrimary');
    expect(server.maxWireVersion).toBe(21);
  });

  it('answers hello like a 7.0 primary', async () => {
    const client = await cluster.connect();
    const hello = await client.db('admin').command({ hello: 1 });
    expect(hello).toMatchObject({
      isWritablePrimary: true,
      secondary: false,
      setName: 'rsHandshake',
      setVersion: 1,
      maxBsonObjectSize: 16777216,
      maxMessageSizeBytes: 48000000,
      maxWriteBatchSize: 100000,
      logicalSessionTimeoutMinutes: 30,
      minWireVersion: 0,
      maxWireVersion: 21,
      readOnly: false,
      ok: 1,
    });
    expect(hello.hosts).toEqual([`127.0.0.1:${cluster.rs.port}`]);
    expect(hello.me).toBe(hello.primary);
    expect(hello.lastWrite.opTime.ts).toBeDefined();
    expect(hello.topologyVersion.processId).toBeDefined();
    expect(typeof hello.connectionId).toBe('number');
    expect(hello.$clusterTime.signature.hash.length()).toBe(20);
    expect(hello.operationTime).toBeDefined();

    const legacy = await client.db('admin').command({ isMaster: 1 });
    expect(legacy.ismaster).toBe(true);
    expect(legacy.isWritablePrimary).toBeUndefined();
  });

  it('answers ping and buildInfo', async () => {
    const client = await cluster.connect();
    await expect(client.db('test').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
    const info = await client.db('admin').command({ buildInfo: 1 });
    expect(info).toMatchObject({
      version: '7.0.14',
      versionArray: [7, 0, 14, 0],
      bits: 64,
      modules: [],
    });
    const fcv = await client
      .db('admin')
      .command({ getParameter: 1, featureCompatibilityVersion: 1 });
    expect(fcv.featureCompatibilityVersion).toEqual({ version: '7.0' });
  });

  it('reports unknown commands and a missing $db like mongod', async () => {
    const client = await cluster.connect();
    await expect(client.db('admin').command({ noSuchThing: 1 })).rejects.toMatchObject({
      code: 59,
      codeName: 'CommandNotFound',
      message: "no such command: 'noSuchThing'",
    });
    await expect(
      client.db('admin').command({ setUserWriteBlockMode: 1, global: 'yes' }),
    ).rejects.toMatchObject({
      code: 14,
    });
  });

  it('serves the admin diagnostics commands', async () => {
    const client = await cluster.connect();
    const admin = client.db('admin');
    const status = await admin.command({ serverStatus: 1 });
    expect(status).toMatchObject({
      process: 'mongod',
      version: '7.0.14',
      repl: { setName: 'rsHandshake', isWritablePrimary: true },
    });
    expect(status.connections.current).toBeGreaterThan(0);
    const rs = await admin.command({ replSetGetStatus: 1 });
    expect(rs.members).toHaveLength(1);
    expect(rs.members[0]).toMatchObject({ stateStr: 'PRIMARY', self: true });
    await expect(admin.command({ getDefaultRWConcern: 1 })).resolves.toMatchObject({
      defaultReadConcern: { level: 'local' },
    });
    await expect(admin.command({ whatsmyuri: 1 })).resolves.toHaveProperty('you');
    await expect(admin.command({ hostInfo: 1 })).resolves.toHaveProperty('system');
    await expect(admin.command({ getCmdLineOpts: 1 })).resolves.toMatchObject({
      parsed: { replication: { replSet: 'rsHandshake' } },
    });
    const cmds = await admin.command({ listCommands: 1 });
    expect(cmds.commands.hello).toBeDefined();
    await expect(client.db('test').command({ getParameter: '*' })).rejects.toMatchObject({
      code: 13,
    });
    const before = cluster.rs.node.oplog.size;
    await admin.command({ appendOplogNote: 1, data: { hi: 1 } });
    expect(cluster.rs.node.oplog.size).toBe(before + 1);
    expect(cluster.rs.node.oplog.newest()).toMatchObject({ op: 'noop' });
  });

  it('refuses transactions with a clear error', async () => {
    const client = await cluster.connect();
    const session = client.startSession();
    session.startTransaction();
    await expect(client.db('admin').command({ ping: 1 }, { session })).rejects.toMatchObject({
      code: 263,
    });
    await session.abortTransaction().catch(() => undefined);
    await session.endSession();
  });
});

suite('monitoring while idle', () => {
  it('streams heartbeats for 30 idle seconds without a single failure', async () => {
    const cluster = await TestCluster.start({ noopIntervalMs: 1000 });
    try {
      const client = cluster.client({ serverSelectionTimeoutMS: 5000 });
      const failures: unknown[] = [];
      const succeeded: boolean[] = [];
      client.on('serverHeartbeatFailed', (e) => failures.push(e.failure));
      client.on('serverHeartbeatSucceeded', (e) => succeeded.push(e.awaited));
      await client.connect();
      const oplogBefore = cluster.rs.node.oplog.size;
      await new Promise((resolve) => setTimeout(resolve, 30_000));
      expect(failures).toEqual([]);
      // The driver switched to the streaming protocol (awaited heartbeats) and it kept flowing.
      expect(succeeded.filter(Boolean).length).toBeGreaterThanOrEqual(2);
      // Periodic no-op writes keep the oplog moving on an idle primary.
      expect(cluster.rs.node.oplog.size).toBeGreaterThan(oplogBefore + 10);
      await expect(client.db('admin').command({ ping: 1 })).resolves.toMatchObject({ ok: 1 });
      expect(topologyOf(client).description.type).toBe('ReplicaSetWithPrimary');
    } finally {
      await cluster.close();
    }
  }, 60_000);
});
