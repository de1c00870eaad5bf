import { bsonTypeOf, toNum } from '../../bson/compare';

/**
 * A string key such that two values get the same key exactly when MongoDB's $group would
 * put them in the same group (numbers compare by value across types, so 1, 1.0 and
 * NumberLong(1) share a key; field names and order matter for documents).
 */
export function groupKey(v: unknown): string {
  const t = bsonTypeOf(v);
  switch (t) {
    case 'undefined':
    case 'null':
      return 'z'; // missing, undefined and null group together
    case 'int':
    case 'long':
    case 'double':
    case 'decimal': {
      const n = toNum(v);
      if (n.kind === 'int') return `n${n.v}`;
      return Number.isNaN(n.v) ? 'nNaN' : `n${n.v}`;
    }
    case 'string':
    case 'symbol':
      return `s${JSON.stringify(typeof v === 'string' ? v : String((v as { value: string }).value))}`;
    case 'array':
      return `a[${(v as unknown[]).map(groupKey).join(',')}]`;
    case 'object':
      return `o{${Object.entries(v as object)
        .map(([k, x]) => `${JSON.stringify(k)}:${groupKey(x)}`)
        .join(',')}}`;
    case 'date':
      return `d${(v as Date).getTime()}`;
    case 'bool':
      return `b${v}`;
    case 'objectId':
      return `i${(v as { toHexString(): string }).toHexString()}`;
    case 'binData': {
      const b = v as { sub_type: number; buffer: Uint8Array; position: number };
      return `x${b.sub_type}:${Buffer.from(b.buffer.subarray(0, b.position)).toString('hex')}`;
    }
    case 'timestamp':
      return `t${String(v)}`;
    case 'regex': {
      const r = v as { pattern?: string; options?: string; source?: string; flags?: string };
      return `r${JSON.stringify([r.pattern ?? r.source, r.options ?? r.flags])}`;
    }
    default:
      return `${t}:${String(v)}`;
  }
}
