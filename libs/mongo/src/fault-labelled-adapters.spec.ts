import { startReplicaSet } from '@sync/mongo-emulator';
import { MongoClient, MongoServerError } from 'mongodb';
import { faultLabelled } from './fault-labelling';
import { MongoClusterDirectory } from './mongo-cluster-directory';

/** The labels an adapter attached (not the engine's fallback reading of an unlabelled error). */
const attached = (error: unknown): string[] | undefined => {
  const own = (error as { faultLabels?: unknown }).faultLabels;
  return own instanceof Set ? [...(own as Set<string>)].sort() : undefined;
};
const notPrimary = () => new MongoServerError({ message: 'not primary', code: 10107 });
const caught = async (run: () => unknown): Promise<unknown> => {
  try {
    await run();
  } catch (error) {
    return error;
  }
  throw new Error('did not fail');
};

class FakeAdapter {
  private readonly secret = 42;
  calls = 0;
  value(): number {
    this.calls += 1;
    return this.secret;
  }
  failNow(): never {
    throw notPrimary();
  }
  async failLater(): Promise<never> {
    await Promise.resolve();
    throw notPrimary();
  }
  async *read(): AsyncGenerator<number> {
    yield 1;
    throw notPrimary();
  }
  async open(): Promise<{ next(): Promise<number> }> {
    return {
      next: () => Promise.reject(notPrimary()),
    };
  }
  async own(): Promise<never> {
    throw new Error('the adapter’s own error');
  }
}

describe('faultLabelled: what an adapter throws leaves it labelled', () => {
  const adapter = faultLabelled(new FakeAdapter(), ['open']);

  it('passes results through, with the method bound to the adapter and a stable identity', () => {
    expect(adapter.value()).toBe(42);
    expect(adapter.calls).toBe(1);
    expect(adapter.value).toBe(adapter.value);
  });

  it('labels a synchronous throw and a rejected promise', async () => {
    expect(attached(await caught(() => adapter.failNow()))).toEqual(['refused', 'transient']);
    expect(attached(await caught(() => adapter.failLater()))).toEqual(['refused', 'transient']);
  });

  it('labels a failed step of a returned async iterable, after the values before it', async () => {
    const seen: number[] = [];
    const error = await caught(async () => {
      for await (const v of adapter.read()) seen.push(v);
    });
    expect(seen).toEqual([1]);
    expect(attached(error)).toEqual(['refused', 'transient']);
  });

  it('labels the failures of what a listed method resolves to (a feed’s cursor)', async () => {
    const cursor = await adapter.open();
    expect(attached(await caught(() => cursor.next()))).toEqual(['refused', 'transient']);
  });

  it('leaves errors that are not the driver’s as they are', async () => {
    const error = await caught(() => adapter.own());
    expect((error as Error).message).toBe('the adapter’s own error');
    expect(attached(error)).toBeUndefined();
  });
});

describe('the directory’s adapters label driver failures (emulator, real driver)', () => {
  let cluster: Awaited<ReturnType<typeof startReplicaSet>>;
  let admin: MongoClient;
  let directory: MongoClusterDirectory;

  beforeAll(async () => {
    cluster = await startReplicaSet();
    admin = await new MongoClient(cluster.uri).connect();
    directory = new MongoClusterDirectory({ c: cluster.uri }, 'labels');
    await admin
      .db('app')
      .collection('items')
      .insertMany([{ _id: 1 }, { _id: 2 }] as never[]);
  });
  afterAll(async () => {
    await admin.db('admin').command({ configureFailPoint: 'failCommand', mode: 'off' });
    await directory.close();
    await admin.close();
    await cluster.stop();
  });

  it('a refused source read (Unauthorized) is labelled refused, not transient', async () => {
    await admin.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 1 },
      data: { failCommands: ['find'], errorCode: 13, appName: 'cluster-sync' },
    });
    const error = await caught(async () => {
      for await (const _ of directory.source('c').readRaw!('app', 'items', {
        range: {},
        batchSize: 10,
      })) {
        // reading
      }
    });
    expect(Number((error as { code?: unknown }).code)).toBe(13);
    expect(attached(error)).toEqual(['refused']);
  });

  it('a job store read that hits NotWritablePrimary is labelled transient', async () => {
    await admin.db('admin').command({
      configureFailPoint: 'failCommand',
      mode: { times: 3 },
      data: { failCommands: ['find'], errorCode: 10107, appName: 'cluster-sync' },
    });
    const error = await caught(() => directory.jobStore('c').load());
    expect(Number((error as { code?: unknown }).code)).toBe(10107);
    expect(attached(error)).toEqual(['refused', 'transient']);
  });
});
