import { randomBytes } from 'node:crypto';
import { MongoClient, type MongoClientOptions, type Timestamp } from 'mongodb';
import { startReplicaSet, type EmulatedReplicaSet, type ReplicaSetOptions } from '../../src';
import { realServerUri } from './real-server';

type ConnectOptions = MongoClientOptions & { user?: string; password?: string };

/**
 * The server a spec talks to through the driver, tracking the clients opened on it so `close()`
 * tears everything down.
 *
 * By default an emulated replica set is started. With `EMULATOR_CONFORMANCE_URI` (or
 * `SYNC_TEST_SOURCE_URI`) set, the cluster is that real server instead: the spec then works in
 * databases of its own — `dbName(name)` prefixes every name with one unique to this cluster —
 * and `close()` drops every database carrying the prefix. Launch options the real server cannot
 * honour are ignored, except `users` (refused: mark such suites `describeEmulatorOnly`).
 */
export class TestCluster {
  private clients: MongoClient[] = [];

  private constructor(
    private readonly emulated: EmulatedReplicaSet | undefined,
    readonly uri: string,
    /** '' on the emulator (names are used as given). */
    private readonly prefix: string,
  ) {}

  static async start(options: ReplicaSetOptions = {}): Promise<TestCluster> {
    if (realServerUri === undefined) {
      const rs = await startReplicaSet(options);
      return new TestCluster(rs, rs.uri, '');
    }
    if (options.users?.length)
      throw new Error(
        'TestCluster.start({ users }) creates users at launch, which only the emulator can do: ' +
          'declare the suite with describeEmulatorOnly(...)',
      );
    return new TestCluster(undefined, realServerUri, `ec${randomBytes(3).toString('hex')}_`);
  }

  /** True when this cluster is a real MongoDB server, not the emulator. */
  get real(): boolean {
    return this.emulated === undefined;
  }

  /** The emulated replica set itself: only for tests declared `emulatorOnly`. */
  get rs(): EmulatedReplicaSet {
    if (!this.emulated)
      throw new Error(
        'cluster.rs reaches into the emulator, which a real server does not have: ' +
          'declare this test with emulatorOnly(...)',
      );
    return this.emulated;
  }

  /** A database name of this cluster's own: `name` on the emulator, `<unique prefix><name>` on a real server. */
  dbName(name: string): string {
    return `${this.prefix}${name}`;
  }

  async connect(options: ConnectOptions = {}): Promise<MongoClient> {
    const client = this.client(options, 5000);
    await client.connect();
    return client;
  }

  /** A client that is not connected yet (for tests that expect connect() to fail). */
  client(options: ConnectOptions = {}, serverSelectionTimeoutMS = 3000): MongoClient {
    const { user, password, ...rest } = options;
    const client = new MongoClient(this.uriFor(user, password), {
      serverSelectionTimeoutMS,
      ...rest,
    });
    this.clients.push(client);
    return client;
  }

  /** The server's current cluster time (`$clusterTime` of a `ping` on a real server). */
  async clusterTime(client: MongoClient): Promise<Timestamp> {
    if (this.emulated) return this.emulated.node.clock.current();
    const reply = await client.db('admin').command({ ping: 1 });
    return reply.$clusterTime.clusterTime as Timestamp;
  }

  /** Server cursors left open: the emulator's count, or a real server's idle cursors on `ns`. */
  async openCursors(client: MongoClient, ns: string): Promise<number> {
    if (this.emulated) return this.emulated.node.cursors.openCount;
    const idle = await client
      .db('admin')
      .aggregate([{ $currentOp: { idleCursors: true } }, { $match: { type: 'idleCursor', ns } }])
      .toArray();
    return idle.length;
  }

  async close(): Promise<void> {
    if (!this.emulated) await this.dropOwnDatabases();
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    this.clients = [];
    await this.emulated?.stop();
  }

  private uriFor(user: string | undefined, password: string | undefined): string {
    if (user === undefined) return this.uri;
    return this.rs.uriWithCredentials(user, password ?? '');
  }

  /** Real server: drops every database whose name carries this cluster's prefix. */
  private async dropOwnDatabases(): Promise<void> {
    const admin = new MongoClient(this.uri, { serverSelectionTimeoutMS: 5000 });
    try {
      const { databases } = await admin.db('admin').admin().listDatabases({ nameOnly: true });
      for (const { name } of databases)
        if (name.startsWith(this.prefix)) await admin.db(name).dropDatabase();
    } finally {
      await admin.close();
    }
  }
}
