import BTree from 'sorted-btree';
import type { Document } from 'bson';
import { detach } from '../bson/codec';
import { CommandError } from '../errors';
import { formatDocument } from '../query/format';
import { compileFilter } from '../query/matcher';
import { HIGH, LOW, comparatorFor, type ValueComparator } from './key-compare';
import { dedupe, fieldKeys, hashValue } from './index-keys';

/** An index key: one value per key-pattern field, then the record id (unique within a tree). */
export type IndexKey = unknown[];

/** Record-id sentinels used at the end of bound keys. */
export const RID_LOW = -Infinity;
export const RID_HIGH = Infinity;

/**
 * One ordered index. Keys are tuples ordered field by field with the pattern's directions and
 * a record-id tiebreak, so non-unique duplicates coexist and every key is unique in the tree.
 * A unique index is the same structure plus a "same values, other record" check on write.
 */
export class Index {
  readonly name: string;
  readonly key: Document;
  readonly fields: string[];
  readonly paths: string[][];
  /** +1/-1 per field; hashed fields order ascending by hash. */
  readonly dirs: number[];
  readonly hashed: boolean[];
  readonly tree: BTree<IndexKey, number>;
  /** Compares one field value under this index's collation (no direction applied). */
  readonly compareValue: ValueComparator;
  /** The tree's own key order. */
  readonly compareKeys: (a: IndexKey, b: IndexKey) => number;
  /** Set once any document produced an array key (never cleared, like mongod's multikey flag). */
  multikey = false;
  private readonly partial?: (doc: Document) => boolean;
  /** Rough byte count of stored keys, for indexSizes/totalIndexSize. */
  bytes = 0;

  /** `spec` is the listIndexes form: {v, key, name, ...options}; it is kept as given. */
  constructor(public spec: Document) {
    this.name = spec.name as string;
    this.key = spec.key as Document;
    this.fields = Object.keys(this.key);
    this.paths = this.fields.map((f) => f.split('.'));
    this.hashed = this.fields.map((f) => this.key[f] === 'hashed');
    this.dirs = this.fields.map((f) =>
      typeof this.key[f] === 'string' ? 1 : Number(this.key[f]) < 0 ? -1 : 1,
    );
    this.compareValue = comparatorFor(spec.collation as Document | undefined);
    if (spec.partialFilterExpression) {
      this.partial = compileFilter(spec.partialFilterExpression as Document, {
        collation: spec.collation as Document | undefined,
      });
    }
    const n = this.fields.length;
    const dirs = this.dirs;
    const cmp = this.compareValue;
    this.compareKeys = (a, b) => {
      for (let i = 0; i < n; i++) {
        const c = cmp(a[i], b[i]);
        if (c !== 0) return dirs[i] < 0 ? -c : c;
      }
      const ra = a[n] as number;
      const rb = b[n] as number;
      return ra < rb ? -1 : ra > rb ? 1 : 0;
    };
    this.tree = new BTree<IndexKey, number>(undefined, this.compareKeys);
  }

  get unique(): boolean {
    return Boolean(this.spec.unique);
  }
  get sparse(): boolean {
    return Boolean(this.spec.sparse);
  }
  get hidden(): boolean {
    return Boolean(this.spec.hidden);
  }
  get isPartial(): boolean {
    return this.partial !== undefined;
  }
  get isHashed(): boolean {
    return this.hashed.some(Boolean);
  }
  get isIdIndex(): boolean {
    return this.name === '_id_';
  }

  /**
   * The key tuples (without record id) a document contributes; none when a sparse or partial
   * index excludes it. Throws CannotIndexParallelArrays like mongod.
   */
  keysOf(doc: Document): IndexKey[] {
    if (this.partial && !this.partial(doc)) return [];
    if (this.fields.length === 1 && !this.hashed[0]) {
      // Fast path: the common single-field index, usually on a scalar.
      const top = this.paths[0].length === 1 ? doc[this.fields[0]] : undefined;
      if (
        this.paths[0].length === 1 &&
        top !== undefined &&
        !Array.isArray(top) &&
        (typeof top !== 'object' || top === null || !this.isPlainDoc(top))
      ) {
        return [[top]];
      }
      const fk = fieldKeys(doc, this.paths[0]);
      if (this.sparse && !fk.present) return [];
      if (fk.multikey) this.multikey = true;
      return dedupe(fk.values, this.compareValue).map((v) => [v]);
    }
    const perField: unknown[][] = [];
    let present = false;
    let arrayField: string | undefined;
    for (let i = 0; i < this.fields.length; i++) {
      const fk = fieldKeys(doc, this.paths[i]);
      present ||= fk.present;
      if (fk.multikey) {
        if (this.hashed[i])
          throw new CommandError(
            16766 as number,
            'Error: hashed indexes do not currently support array values',
          );
        if (arrayField !== undefined) {
          throw new CommandError(
            171 as number,
            `cannot index parallel arrays [${this.fields[i]}] [${arrayField}]`,
          );
        }
        arrayField = this.fields[i];
        this.multikey = true;
      }
      const values = this.hashed[i] ? fk.values.map((v) => hashValue(v ?? null)) : fk.values;
      perField.push(dedupe(values, this.compareValue));
    }
    if (this.sparse && !present) return [];
    let keys: IndexKey[] = [[]];
    for (const values of perField) {
      const next: IndexKey[] = [];
      for (const k of keys) for (const v of values) next.push([...k, v]);
      keys = next;
    }
    return keys;
  }

  private isPlainDoc(v: object): boolean {
    const proto = Object.getPrototypeOf(v);
    return proto === Object.prototype || proto === null;
  }

  /** Key tuple (values only) as the `keyValue` document of a duplicate key error. */
  keyValueOf(values: unknown[]): Document {
    const out: Document = {};
    this.fields.forEach((f, i) => (out[f] = values[i]));
    return out;
  }

  /** True when two key tuples hold equal values field by field (record ids ignored). */
  sameValues(a: unknown[], b: unknown[]): boolean {
    for (let i = 0; i < this.fields.length; i++)
      if (this.compareValue(a[i], b[i]) !== 0) return false;
    return true;
  }

  /** The record holding the same key values as `values`, other than `rid`, if any. */
  findDuplicate(values: unknown[], rid: number): number | undefined {
    const probe = [...values, RID_LOW];
    const found = this.tree.getPairOrNextHigher(probe);
    if (!found) return undefined;
    const [key, other] = found;
    for (let i = 0; i < values.length; i++)
      if (this.compareValue(key[i], values[i]) !== 0) return undefined;
    if (other !== rid) return other;
    // The first match is the record itself; look at the next one.
    const after = this.tree.nextHigherPair(key);
    if (!after) return undefined;
    for (let i = 0; i < values.length; i++)
      if (this.compareValue(after[0][i], values[i]) !== 0) return undefined;
    return after[1];
  }

  duplicateKeyError(ns: string, values: unknown[]): CommandError {
    const keyValue = this.keyValueOf(values);
    let msg = `E11000 duplicate key error collection: ${ns} index: ${this.name} dup key: ${formatDocument(keyValue)}`;
    if (this.spec.collation)
      msg += ` collation: ${formatDocument(this.spec.collation as Document)}`;
    return new CommandError('DuplicateKey', msg, {
      extra: { keyPattern: { ...this.key }, keyValue },
    });
  }

  add(rid: number, keys: IndexKey[]): void {
    for (const k of keys) {
      // The stored tuple is a new exact-size array (pushing the record id onto `k` would grow
      // its backing store to ~18 slots). The index holds key values only, never the document:
      // a Binary value taken from a decoded command or record is copied so it does not keep that
      // buffer alive.
      const n = k.length;
      const stored: IndexKey = new Array(n + 1);
      for (let i = 0; i < n; i++) stored[i] = detach(k[i]);
      stored[n] = rid;
      this.tree.set(stored, rid);
      this.bytes += 4 + stored.length * 12;
    }
  }

  remove(rid: number, keys: IndexKey[]): void {
    for (const k of keys) {
      if (this.tree.delete([...k, rid])) this.bytes -= 16 + k.length * 12;
    }
  }

  clear(): void {
    this.tree.clear();
    this.bytes = 0;
  }

  /** Bound helpers: the lowest/highest sentinel for field i in tree order. */
  lowFor(i: number): unknown {
    return this.dirs[i] < 0 ? HIGH : LOW;
  }
  highFor(i: number): unknown {
    return this.dirs[i] < 0 ? LOW : HIGH;
  }
}
