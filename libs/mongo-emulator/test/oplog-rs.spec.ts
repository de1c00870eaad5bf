import { Timestamp, type MongoClient } from 'mongodb';
import { TestCluster } from './helpers/cluster';
import { describeEmulatorOnly } from './helpers/real-server';

const suite = describeEmulatorOnly('a 5-entry history (historySize)');

/** local.oplog.rs read in natural order: how tools find a replica set's oplog window. */
suite('local.oplog.rs', () => {
  let cluster: TestCluster;
  let client: MongoClient;

  beforeAll(async () => {
    cluster = await TestCluster.start({ historySize: 5 });
    client = await cluster.connect();
  });
  afterAll(() => cluster.close());

  const oplog = () => client.db('local').collection('oplog.rs');

  it('first and last entries by $natural bound the (truncated) history', async () => {
    for (let i = 0; i < 12; i++)
      await client.db('a').collection<{ _id: number }>('b').insertOne({ _id: i });
    const [first] = await oplog().find({}).sort({ $natural: 1 }).limit(1).toArray();
    const [last] = await oplog().find({}).sort({ $natural: -1 }).limit(1).toArray();
    expect(first!.ts).toBeInstanceOf(Timestamp);
    expect(last).toMatchObject({ op: 'i', ns: 'a.b', o: { _id: 11 } });
    expect(first!.ts.lessThan(last!.ts)).toBe(true);
    expect(first!.wall).toBeInstanceOf(Date);
    const all = await oplog()
      .find({}, { projection: { ts: 1, _id: 0 } })
      .toArray();
    expect(all).toHaveLength(5); // --history 5
    expect(all[0]).toEqual({ ts: first!.ts });
    const since = await oplog()
      .find({ ts: { $gt: first!.ts } })
      .toArray();
    expect(since).toHaveLength(4);
  });
});
