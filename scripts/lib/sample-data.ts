import { Binary, Decimal128, Double, Int32, Long, ObjectId, Timestamp, type Document, type MongoClient } from 'mongodb';

/** A small deterministic pseudo-random generator, so every demo run loads the same data. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const CITIES = ['Lisbon', 'Oslo', 'Lagos', 'Lima', 'Osaka', 'Quito', 'Perth', 'Turin'];
const STATUSES = ['placed', 'paid', 'shipped', 'delivered'];

export function customer(i: number, r: () => number): Document {
  return {
    _id: new Int32(i),
    email: `customer${i}@example.com`,
    name: { first: `First${i}`, last: `Last${i % 97}` },
    address: { city: CITIES[i % CITIES.length], zip: String(10000 + Math.floor(r() * 89999)) },
    since: new Date(Date.UTC(2015, 0, 1) + Math.floor(r() * 3e11)),
    loyalty: { points: new Long(Math.floor(r() * 1e6)), tier: r() > 0.8 ? 'gold' : 'standard' },
    tags: r() > 0.5 ? ['newsletter'] : [],
  };
}

export function order(i: number, r: () => number, customers: number): Document {
  const items = Array.from({ length: 1 + Math.floor(r() * 4) }, (_, k) => ({
    sku: `SKU-${(i * 7 + k) % 500}`,
    qty: new Int32(1 + Math.floor(r() * 5)),
    price: Decimal128.fromString((r() * 200).toFixed(2)),
  }));
  return {
    _id: new ObjectId(),
    customerId: new Int32(Math.floor(r() * customers)),
    status: STATUSES[Math.floor(r() * STATUSES.length)],
    items,
    total: new Double(items.reduce((sum, it) => sum + Number(it.price.toString()) * it.qty.value, 0)),
    placedAt: new Date(),
    audit: { version: new Int32(1), ts: new Timestamp({ t: Math.floor(Date.now() / 1000), i: i + 1 }) },
  };
}

export function product(i: number, r: () => number): Document {
  return {
    _id: `SKU-${i}`,
    title: `Product ${i}`,
    price: Decimal128.fromString((r() * 200).toFixed(2)),
    stock: new Int32(Math.floor(r() * 1000)),
    weightKg: new Double(r() * 20),
    thumbnail: new Binary(Buffer.from(`png-${i}`), 0),
  };
}

export interface DatasetSize {
  customers: number;
  orders: number;
  products: number;
}

/** Loads the demo store: three databases, indexes of several kinds, a capped log and a view. */
export async function loadSampleStore(client: MongoClient, size: DatasetSize): Promise<number> {
  const r = rng(42);
  const shop = client.db('shop');
  await shop.createCollection('customers');
  await shop.collection('customers').createIndexes([
    { key: { email: 1 }, name: 'email_1', unique: true },
    { key: { 'address.city': 1, since: -1 }, name: 'city_since' },
  ]);
  await shop.collection('orders').createIndexes([
    { key: { customerId: 1, placedAt: -1 }, name: 'customer_recent' },
    { key: { status: 1 }, name: 'open_orders', partialFilterExpression: { status: 'placed' } },
  ]);
  await insertInBatches(shop.collection('customers'), size.customers, (i) => customer(i, r));
  await insertInBatches(shop.collection('orders'), size.orders, (i) => order(i, r, size.customers));
  await shop.createCollection('bigSpenders', {
    viewOn: 'orders',
    pipeline: [{ $match: { total: { $gt: 500 } } }],
  });
  const catalog = client.db('catalog');
  await insertInBatches(catalog.collection('products'), size.products, (i) => product(i, r));
  await catalog.collection('products').createIndex({ title: 1 }, { name: 'title_1', collation: { locale: 'en', strength: 2 } });
  const ops = client.db('ops');
  await ops.createCollection('auditLog', { capped: true, size: 1024 * 1024 });
  await insertInBatches(ops.collection('auditLog'), 200, (i) => ({ _id: new Int32(i), msg: `boot ${i}`, at: new Date() }));
  await ops.collection('sessions').createIndex({ lastSeen: 1 }, { expireAfterSeconds: 86400 });
  return size.customers + size.orders + size.products + 200;
}

async function insertInBatches(
  coll: ReturnType<ReturnType<MongoClient['db']>['collection']>,
  count: number,
  make: (i: number) => Document,
): Promise<void> {
  for (let start = 0; start < count; start += 1000) {
    const docs = Array.from({ length: Math.min(1000, count - start) }, (_, k) => make(start + k));
    await coll.insertMany(docs, { ordered: false });
  }
}
