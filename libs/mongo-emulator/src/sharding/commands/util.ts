import { Binary, type Document } from 'bson';

export function isDocument(v: unknown): v is Document {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Binary);
}

export function firstKey(body: Document): string {
  return Object.keys(body)[0] ?? '';
}

/** The database part of a `db.coll` namespace string. */
export function namespaceDb(ns: unknown): string | undefined {
  if (typeof ns !== 'string') return undefined;
  const dot = ns.indexOf('.');
  return dot > 0 ? ns.slice(0, dot) : undefined;
}
