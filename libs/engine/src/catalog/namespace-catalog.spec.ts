import type { JobRecord, NamespaceRecord } from '../ports/job-store';
import { NamespaceCatalog } from './namespace-catalog';

const record = (key: string, database: string, collection: string): NamespaceRecord =>
  ({ key, database, collection, type: 'collection' }) as unknown as NamespaceRecord;

function catalogOf(records: NamespaceRecord[]) {
  const job = { namespaces: records } as unknown as JobRecord;
  return { job, catalog: new NamespaceCatalog(() => job) };
}

/** What a scan of the records finds: byName must answer exactly that. */
const scan = (records: NamespaceRecord[], db: string, coll: string) =>
  records.find((r) => r.database === db && r.collection === coll);

describe('NamespaceCatalog.byName', () => {
  it('answers as a scan would, through adds, removes, renames and replaced arrays', () => {
    const { job, catalog } = catalogOf([record('a', 'app', 'users'), record('b', 'app', 'orders')]);
    const check = (names: Array<[string, string]>) => {
      for (const [db, coll] of names)
        expect([db, coll, catalog.byName(db, coll)]).toEqual([
          db,
          coll,
          scan(job.namespaces, db, coll),
        ]);
    };
    const names: Array<[string, string]> = [
      ['app', 'users'],
      ['app', 'orders'],
      ['app', 'carts'],
      ['app', 'accounts'],
      ['other', 'users'],
    ];
    check(names);
    expect(catalog.byName('app', 'users')?.key).toBe('a');

    catalog.rename('a', { db: 'app', coll: 'accounts' });
    check(names);
    expect(catalog.byName('app', 'users')).toBeUndefined();
    expect(catalog.byName('app', 'accounts')?.key).toBe('a');

    catalog.add(record('c', 'app', 'users'));
    catalog.remove('b');
    check(names);
    expect(catalog.byName('app', 'users')?.key).toBe('c');

    job.namespaces = [record('d', 'other', 'users')];
    check(names);
    expect(catalog.byName('other', 'users')?.key).toBe('d');
  });

  it('never answers a record for a name it no longer has, however it was renamed', () => {
    const { catalog } = catalogOf([record('a', 'app', 'users')]);
    expect(catalog.byName('app', 'users')?.key).toBe('a');
    catalog.byKey('a')!.collection = 'people'; // not through rename()
    expect(catalog.byName('app', 'users')).toBeUndefined();
  });

  it('with two records of one name, gives the first (as a scan did)', () => {
    const { catalog } = catalogOf([record('a', 'app', 'users'), record('b', 'app', 'users')]);
    expect(catalog.byName('app', 'users')?.key).toBe('a');
  });

  it('tells apart names that only a separator would confuse', () => {
    const { catalog } = catalogOf([record('a', 'a.b', 'c'), record('b', 'a', 'b.c')]);
    expect(catalog.byName('a.b', 'c')?.key).toBe('a');
    expect(catalog.byName('a', 'b.c')?.key).toBe('b');
  });

  it('refuses to rename a record it does not hold', () => {
    const { catalog } = catalogOf([]);
    expect(() => catalog.rename('x', { db: 'app', coll: 'y' })).toThrow('no catalog record x');
  });
});
