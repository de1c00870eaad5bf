import { ReadConcern } from 'mongodb';
import { CachingMongoClient } from './caching-client';

describe('CachingMongoClient (handles reused, never connected here)', () => {
  const client = new CachingMongoClient('mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=10');

  it('returns the same Db and Collection handles for the same names', () => {
    const a = client.db('shop');
    expect(client.db('shop')).toBe(a);
    expect(client.db('crm')).not.toBe(a);
    const orders = a.collection('orders');
    expect(a.collection('orders')).toBe(orders);
    expect(a.collection('orders').collectionName).toBe('orders');
    expect(a.collection('items')).not.toBe(orders);
    expect(a.databaseName).toBe('shop');
  });

  it('calls with options get their own handles, with those options', () => {
    const plain = client.db('shop');
    const local = client.db('shop', { readConcern: ReadConcern.fromOptions({ level: 'local' }) });
    expect(local).not.toBe(plain);
    expect(local.readConcern?.level).toBe('local');
    const c = plain.collection('orders', {
      readConcern: ReadConcern.fromOptions({ level: 'local' }),
    });
    expect(c).not.toBe(plain.collection('orders'));
    expect(c.readConcern?.level).toBe('local');
  });

  it('keeps a bounded number of database handles', () => {
    const first = client.db('db0');
    for (let i = 1; i <= 300; i++) client.db(`db${i}`);
    expect(client.db('db0')).not.toBe(first); // evicted, built again
    expect(client.db('db300')).toBe(client.db('db300'));
  });

  it('keeps a bounded number of collection handles across all databases', () => {
    const first = client.db('t0').collection('c0');
    // 3 databases × 200 collections: more than the bound in all, less than it in each.
    for (let d = 0; d < 3; d++)
      for (let c = 0; c < 200; c++) client.db(`t${d}`).collection(`c${c}`);
    expect(client.db('t0').collection('c0')).not.toBe(first); // evicted, built again
    const last = client.db('t2').collection('c199');
    expect(client.db('t2').collection('c199')).toBe(last);
    expect(last.namespace).toBe('t2.c199');
    // The same collection name in another database is another handle.
    expect(client.db('t1').collection('c199')).not.toBe(last);
  });
});
