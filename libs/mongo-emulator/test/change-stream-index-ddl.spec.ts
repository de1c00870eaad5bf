import { Long, type Document, type MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';

/**
 * createIndexes / dropIndexes / modify events (showExpandedEvents) as MongoDB 7.0 reports them
 * (change-events docs; jstests change_streams/collmod_events, noPassthrough hidden index
 * oplog entries):
 * - createIndexes and dropIndexes: `operationDescription.indexes`, the full spec(s);
 * - modify: `operationDescription` is what collMod changed (`index: {name, <option>}` for an
 *   index), `stateBeforeChange: {collectionOptions: {uuid, ...}, indexOptions?: {<old values>}}`;
 * - hiding a hidden index (or un-hiding a visible one) is a no-op: no event, or, with another
 *   option changed in the same collMod, no `hidden` in it.
 */
describe('index DDL change events through the mongodb driver', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start({ historySize: 1000 });
    client = await cluster.connect();
  });
  afterAll(async () => {
    await cluster.close();
  });

  it('reports index DDL and collMod with MongoDB operationDescription and stateBeforeChange', async () => {
    const dbName = cluster.dbName('idx');
    const db = client.db(dbName);
    await db.createCollection('c');
    const [info] = await db.listCollections({ name: 'c' }).toArray();
    const uuid = (info as { info: { uuid: unknown } }).info.uuid;
    const stream = db.watch([], { showExpandedEvents: true, maxAwaitTimeMS: 200 });
    await stream.tryNext();

    await db.collection('c').createIndex({ a: 1 }, { name: 'x', sparse: true });
    await db.command({ collMod: 'c', index: { name: 'x', hidden: true } });
    await db.command({ collMod: 'c', index: { name: 'x', hidden: true } }); // no-op: no event
    await db.collection('c').createIndex({ t: 1 }, { name: 't', expireAfterSeconds: 100 });
    await db.command({
      collMod: 'c',
      index: { name: 't', expireAfterSeconds: Long.fromNumber(200), hidden: false },
    });
    await db.command({ collMod: 'c', validator: { a: { $type: 'number' } } });
    await db.command({ collMod: 'c', validationLevel: 'moderate' });
    await db.collection('c').dropIndex('x');

    const events: Document[] = [];
    while (events.length < 7) {
      const event = await stream.tryNext();
      if (event) events.push(event);
    }
    expect(await stream.tryNext()).toBeNull();
    await stream.close();
    const shape = (e: Document) => ({
      operationType: e.operationType,
      operationDescription: e.operationDescription,
      ...(e.stateBeforeChange ? { stateBeforeChange: e.stateBeforeChange } : {}),
    });
    expect(events.map(shape)).toEqual([
      {
        operationType: 'createIndexes',
        operationDescription: { indexes: [{ v: 2, key: { a: 1 }, name: 'x', sparse: true }] },
      },
      {
        operationType: 'modify',
        operationDescription: { index: { name: 'x', hidden: true } },
        stateBeforeChange: { collectionOptions: { uuid }, indexOptions: { hidden: false } },
      },
      {
        operationType: 'createIndexes',
        operationDescription: {
          indexes: [{ v: 2, key: { t: 1 }, name: 't', expireAfterSeconds: 100 }],
        },
      },
      {
        operationType: 'modify',
        operationDescription: { index: { name: 't', expireAfterSeconds: 200 } },
        stateBeforeChange: {
          collectionOptions: { uuid },
          indexOptions: { expireAfterSeconds: 100 },
        },
      },
      {
        operationType: 'modify',
        operationDescription: { validator: { a: { $type: 'number' } } },
        stateBeforeChange: { collectionOptions: { uuid } },
      },
      {
        operationType: 'modify',
        operationDescription: { validationLevel: 'moderate' },
        stateBeforeChange: {
          collectionOptions: { uuid, validator: { a: { $type: 'number' } } },
        },
      },
      {
        operationType: 'dropIndexes',
        operationDescription: {
          indexes: [{ v: 2, key: { a: 1 }, name: 'x', sparse: true, hidden: true }],
        },
      },
    ]);
    // uuid first, as mongod's CollectionOptions::toBSON writes it.
    expect(Object.keys(events[5]!.stateBeforeChange.collectionOptions)[0]).toBe('uuid');
  });
});
