import { NamespaceFilter } from './namespace-filter';
import { compileSafeRegex, UnsafeRegexError } from '@sync/contracts';

describe('NamespaceFilter', () => {
  it('selects everything but system databases, the metadata database and system.* without filters', () => {
    const f = new NamespaceFilter();
    expect(f.collectionSelected('shop', 'orders')).toBe(true);
    for (const db of ['admin', 'config', 'local', 'sync_reserved_for_internal_use']) {
      expect(f.databaseSelected(db)).toBe(false);
      expect(f.collectionSelected(db, 'x')).toBe(false);
    }
    expect(f.collectionSelected('shop', 'system.views')).toBe(false);
    expect(f.collectionSelected('shop', 'system.js')).toBe(false);
  });

  it('include: databases not named are not synced; whole database or listed collections', () => {
    const f = new NamespaceFilter([
      { database: 'shop' },
      { database: 'crm', collections: ['people'] },
    ]);
    expect(f.databaseSelected('other')).toBe(false);
    expect(f.collectionSelected('other', 'x')).toBe(false);
    expect(f.collectionSelected('shop', 'anything')).toBe(true);
    expect(f.collectionSelected('crm', 'people')).toBe(true);
    expect(f.collectionSelected('crm', 'companies')).toBe(false);
  });

  it('include by regex with options, then exclude', () => {
    const f = new NamespaceFilter(
      [{ database: 'logs', collectionsRegex: { pattern: '^APP_', options: 'i' } }],
      [{ database: 'logs', collections: ['app_secret'] }],
    );
    expect(f.collectionSelected('logs', 'app_web')).toBe(true);
    expect(f.collectionSelected('logs', 'App_mobile')).toBe(true);
    expect(f.collectionSelected('logs', 'app_secret')).toBe(false);
    expect(f.collectionSelected('logs', 'audit')).toBe(false);
  });

  it('exclude alone removes a database or collections and keeps the rest', () => {
    const f = new NamespaceFilter(undefined, [
      { database: 'tmp' },
      { database: 'shop', collectionsRegex: { pattern: '_old$' } },
    ]);
    expect(f.databaseSelected('tmp')).toBe(false);
    expect(f.collectionSelected('shop', 'orders')).toBe(true);
    expect(f.collectionSelected('shop', 'orders_old')).toBe(false);
    expect(f.collectionSelected('crm', 'people')).toBe(true);
  });

  it('empty arrays behave as no filter; collections and regex in one entry are a union', () => {
    expect(new NamespaceFilter([], []).collectionSelected('a', 'b')).toBe(true);
    const f = new NamespaceFilter([
      { database: 'a', collections: ['x'], collectionsRegex: { pattern: '^y' } },
    ]);
    expect(f.collectionSelected('a', 'x')).toBe(true);
    expect(f.collectionSelected('a', 'yes')).toBe(true);
    expect(f.collectionSelected('a', 'z')).toBe(false);
  });

  it('a global-flag-free regex is stateless between calls', () => {
    const f = new NamespaceFilter([{ database: 'a', collectionsRegex: { pattern: 'c' } }]);
    expect([1, 2, 3].map(() => f.collectionSelected('a', 'c'))).toEqual([true, true, true]);
  });
});

describe('compileSafeRegex', () => {
  it.each([
    '(a+)+$',
    '(a|aa)*b',
    '(x*)*',
    '(?:a{2,})+',
    'a*a*a*b',
    '.*_.*_.*x',
    '(a)\\1',
    '.{0,100}.{0,100}.{0,100}.{0,100}',
  ])('rejects %s', (pattern) => expect(() => compileSafeRegex(pattern)).toThrow(UnsafeRegexError));

  it.each([
    '^orders_\\d+$',
    '^(orders|invoices)_2024',
    '^logs_.*_(eu|us)$',
    '[a-z]+_v[0-9]{1,3}',
    '(ab)?c+',
  ])('accepts %s', (pattern) => expect(compileSafeRegex(pattern)).toBeInstanceOf(RegExp));

  it('rejects overlong patterns and unknown options', () => {
    expect(() => compileSafeRegex('a'.repeat(2000))).toThrow(UnsafeRegexError);
    expect(() => compileSafeRegex('a', 'g')).toThrow(UnsafeRegexError);
  });

  it('supports i, m, s and x (extended: whitespace and comments ignored)', () => {
    const re = compileSafeRegex('^ord ers # a comment\n _v[ ]2$', 'xi');
    expect(re.test('ORDERS_v 2')).toBe(true);
    expect(compileSafeRegex('^a.b$', 's').test('a\nb')).toBe(true);
  });

  it('accepted patterns finish on the worst 255-byte collection names', () => {
    // No timing assertion (speed is the benchmark's business): a pattern with catastrophic
    // backtracking would need ~2^255 steps here and never finish within the test timeout.
    const subjects = ['a'.repeat(255), 'a'.repeat(254) + '!', '_'.repeat(255)];
    const patterns = ['a*a*!x', '^(a|b)c*a+$', '.*_.*x', '(?:a|b)?a{1,16}a{1,16}a{1,16}!'];
    const results = patterns.map((p) => subjects.map((s) => compileSafeRegex(p).test(s)));
    expect(results).toEqual([
      [false, false, false],
      [true, false, false],
      [false, false, false],
      [false, true, false],
    ]);
  });
});
