import { MongoClient, type MongoClientOptions } from 'mongodb';
import { startReplicaSet, type EmulatedReplicaSet, type ReplicaSetOptions } from '../../src';

/**
 * Starts an emulated replica set and tracks the clients opened on it, so `close()`
 * tears everything down (clients first, then the server).
 */
export class TestCluster {
  private clients: MongoClient[] = [];

  private constructor(readonly rs: EmulatedReplicaSet) {}

  static async start(options: ReplicaSetOptions = {}): Promise<TestCluster> {
    return new TestCluster(await startReplicaSet(options));
  }

  get uri(): string {
    return this.rs.uri;
  }

  async connect(
    options: MongoClientOptions & { user?: string; password?: string } = {},
  ): Promise<MongoClient> {
    const { user, password, ...rest } = options;
    const uri = user !== undefined ? this.rs.uriWithCredentials(user, password ?? '') : this.rs.uri;
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 5000, ...rest });
    this.clients.push(client);
    await client.connect();
    return client;
  }

  /** A client that is not connected yet (for tests that expect connect() to fail). */
  client(options: MongoClientOptions & { user?: string; password?: string } = {}): MongoClient {
    const { user, password, ...rest } = options;
    const uri = user !== undefined ? this.rs.uriWithCredentials(user, password ?? '') : this.rs.uri;
    const client = new MongoClient(uri, { serverSelectionTimeoutMS: 3000, ...rest });
    this.clients.push(client);
    return client;
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((c) => c.close().catch(() => undefined)));
    this.clients = [];
    await this.rs.stop();
  }
}
