import { BSON, type Document } from 'bson';

/** Distinct documents kept for sharing; past this, new ones are returned as they are. */
const MAX_SHARED = 10_000;

const shared = new Map<string, Document>();

/**
 * One frozen instance per distinct document (same fields, order, BSON types and values), for
 * the parts of catalog records that repeat across namespaces: index specs (`_id_` on every
 * collection, the same secondary index on every tenant's) and collection options (`{}` on
 * most). Each record otherwise carried its own copies: sharing them took ~400 bytes per
 * namespace off the worker's live heap (heap snapshots at 50,000 namespaces, before and after).
 * Frozen, so that code changing a shared document in place fails loudly instead of changing
 * every namespace's.
 */
export function sharedDocument<T extends Document>(doc: T): T {
  let key: string;
  try {
    key = Buffer.from(BSON.serialize(doc)).toString('latin1');
  } catch {
    return doc; // not serialisable as it stands (never from a listing): kept as is
  }
  const known = shared.get(key);
  if (known) return known as T;
  if (shared.size >= MAX_SHARED) return doc;
  shared.set(key, Object.freeze(doc));
  return doc;
}

/** `sharedDocument` over a list (index specs). */
export function sharedDocuments<T extends Document>(docs: T[]): T[] {
  return docs.map((d) => sharedDocument(d));
}
