import { BSON, type Document } from 'bson';

/**
 * A string identifying one document of one namespace, for lane routing and for collapsing
 * events in a batch. Built from `_id` only (not the whole documentKey): on a sharded source a
 * shard-key update changes the documentKey of the same document, and its events must still
 * stay in one lane, in order.
 *
 * Numbers are normalised by value because MongoDB's `_id` index treats Int32 1, Int64 1,
 * Double 1.0 and Decimal128 1 as the same key: a delete of `{_id: 1}` followed by an insert of
 * `{_id: 1.0}` must stay ordered, so both must hash to the same lane.
 */
export function documentIdentity(db: string, coll: string, documentKey: Document): string {
  return `${db}.${coll}\u0000${canonical(documentKey._id)}`;
}

function canonical(value: unknown): string {
  const numeric = numericValue(value);
  if (numeric !== undefined) return `n:${numeric}`;
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isPlainDocument(value)) {
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`)
      .join(',')}}`;
  }
  // Every other BSON value compares by type and bytes: its canonical EJSON is exact.
  return BSON.EJSON.stringify({ v: value }, { relaxed: false });
}

/**
 * Exact value of a number as text, or undefined for non-numbers. Integers of every numeric
 * type share one spelling (they are the same `_id`); non-integral doubles and decimals keep a
 * type prefix because MongoDB does not treat double 0.1 and Decimal128 0.1 as equal, and a key
 * must never merge two different documents (collapsing would drop one's writes).
 */
function numericValue(value: unknown): string | undefined {
  if (typeof value === 'number') return fromDouble(value);
  if (typeof value === 'bigint') return value.toString();
  if (!value || typeof value !== 'object') return undefined;
  const bsontype = (value as { _bsontype?: string })._bsontype;
  if (bsontype === 'Int32') return String((value as { valueOf(): number }).valueOf());
  if (bsontype === 'Double') return fromDouble((value as { valueOf(): number }).valueOf());
  if (bsontype === 'Long') return (value as { toString(): string }).toString();
  if (bsontype === 'Decimal128') return fromDecimal((value as { toString(): string }).toString());
  return undefined;
}

function fromDouble(n: number): string {
  if (Number.isNaN(n)) return 'NaN';
  if (!Number.isFinite(n)) return n > 0 ? 'Infinity' : '-Infinity';
  if (Number.isInteger(n)) return BigInt(n).toString();
  return `d:${String(n)}`;
}

function fromDecimal(text: string): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (!m) return text.replace(/^[+-]/, (s) => (s === '-' ? '-' : '')); // NaN / Infinity
  const [, sign, intPart, fracPart = '', expText = '0'] = m;
  let digits = (intPart + fracPart).replace(/^0+/, '');
  let exponent = Number(expText) - fracPart.length;
  if (digits === '') return '0';
  while (digits.endsWith('0')) {
    digits = digits.slice(0, -1);
    exponent += 1;
  }
  const neg = sign === '-' ? '-' : '';
  if (exponent >= 0) return `${neg}${digits}${'0'.repeat(exponent)}`;
  return `m:${neg}${digits}e${exponent}`;
}

function isPlainDocument(value: unknown): value is Document {
  if (!value || typeof value !== 'object') return false;
  if ((value as { _bsontype?: string })._bsontype) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** FNV-1a 32-bit: cheap, stable across processes, good spread for lane selection. */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}
