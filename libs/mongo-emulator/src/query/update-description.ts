import type { Document } from 'bson';
import { bsonTypeOf } from '../bson/compare';
import { bsonSize } from '../bson/codec';
import type { UpdateDescription } from '../oplog/oplog-entry';
import { identical } from './update-fields';
import { dottedOf, noteAmbiguity, type DescPart } from './disambiguate';

/**
 * The change-stream `updateDescription` of an update, derived the way mongod derives it:
 * compute a `$v: 2` oplog diff of pre- and post-image (doc_diff::computeOplogDiff) and read
 * it back (updatedFields from `u`/`i` entries, removedFields from `d`, truncatedArrays from
 * an array's new length `l`).
 *
 * Like mongod's diff: fields are compared position by position, so a field that moved is
 * reported as updated; nested documents/arrays of the same type are diffed recursively
 * unless that sub-diff would be larger (in BSON bytes) than the new value, in which case
 * the whole value is reported; an array that shrank reports its new size in
 * truncatedArrays plus any changed surviving elements as "arr.<i>".
 *
 * Use it for pipeline updates only: mongod computes this diff only there. For modifier
 * updates it logs what each modifier touched (update/v2_log_builder.cpp), which
 * applyUpdate() returns as `result.description` (see update-log.ts).
 */
export function computeUpdateDescription(before: Document, after: Document): UpdateDescription {
  const diff = docDiff(before, after, true)!;
  const out: UpdateDescription = { updatedFields: {}, removedFields: [], truncatedArrays: [] };
  readDocDiff(diff, [], out);
  return out;
}

/** A `$v: 2` diff: d (deleted), u (updated), i (inserted), s<field> (sub-diffs). */
interface DocDiff {
  d: string[];
  u: Array<[string, unknown]>;
  i: Array<[string, unknown]>;
  s: Array<[string, DocDiff | ArrayDiff]>;
}

/** An array diff: optional new length `l`, element updates `u<i>` and sub-diffs `s<i>`. */
interface ArrayDiff {
  array: true;
  l?: number;
  u: Array<[number, unknown]>;
  s: Array<[number, DocDiff | ArrayDiff]>;
}

const isContainer = (t: string) => t === 'object' || t === 'array';

function docDiff(pre: Document, post: Document, top: boolean): DocDiff | undefined {
  const diff: DocDiff = { d: [], u: [], i: [], s: [] };
  const preKeys = Object.keys(pre);
  const postKeys = Object.keys(post);
  const deletes = new Set<string>();
  let p = 0;
  let q = 0;
  while (p < preKeys.length && q < postKeys.length) {
    const name = preKeys[p];
    if (name !== postKeys[q]) {
      deletes.add(name); // re-added below as an insert if it moved
      p++;
      continue;
    }
    if (!identical(pre[name], post[name])) addChange(diff.u, diff.s, name, pre[name], post[name]);
    p++;
    q++;
  }
  for (; p < preKeys.length; p++) diff.d.push(preKeys[p]);
  for (; q < postKeys.length; q++) {
    diff.i.push([postKeys[q], post[postKeys[q]]]);
    deletes.delete(postKeys[q]);
  }
  diff.d.push(...deletes);
  return top || serializedSize(diff) < bsonSize(post) ? diff : undefined;
}

function arrayDiff(pre: unknown[], post: unknown[]): ArrayDiff | undefined {
  const diff: ArrayDiff = { array: true, u: [], s: [] };
  const n = Math.min(pre.length, post.length);
  for (let i = 0; i < n; i++) {
    if (!identical(pre[i], post[i])) addChange(diff.u, diff.s, i, pre[i], post[i]);
  }
  for (let i = n; i < post.length; i++) diff.u.push([i, post[i]]);
  if (pre.length > post.length) diff.l = post.length;
  return serializedSize(diff) < bsonSize(asDocument(post)) ? diff : undefined;
}

function addChange<K>(
  updates: Array<[K, unknown]>,
  subs: Array<[K, DocDiff | ArrayDiff]>,
  key: K,
  pre: unknown,
  post: unknown,
): void {
  const t = bsonTypeOf(pre);
  if (t === bsonTypeOf(post) && isContainer(t)) {
    const sub =
      t === 'object'
        ? docDiff(pre as Document, post as Document, false)
        : arrayDiff(pre as unknown[], post as unknown[]);
    if (sub) {
      subs.push([key, sub]);
      return;
    }
  }
  updates.push([key, post]);
}

/** Size of the diff as mongod would serialise it, for the "is the diff worth it" test. */
function serializedSize(diff: DocDiff | ArrayDiff): number {
  return bsonSize(serialize(diff));
}

function serialize(diff: DocDiff | ArrayDiff): Document {
  const out: Document = {};
  if ('array' in diff) {
    out.a = true;
    if (diff.l !== undefined) out.l = diff.l;
    for (const [i, v] of diff.u) out[`u${i}`] = v;
    for (const [i, s] of diff.s) out[`s${i}`] = serialize(s);
    return out;
  }
  if (diff.d.length) out.d = Object.fromEntries(diff.d.map((k) => [k, false]));
  if (diff.u.length) out.u = Object.fromEntries(diff.u);
  if (diff.i.length) out.i = Object.fromEntries(diff.i);
  for (const [k, s] of diff.s) out[`s${k}`] = serialize(s);
  return out;
}

function asDocument(arr: unknown[]): Document {
  return Object.fromEntries(arr.map((v, i) => [String(i), v]));
}

function readDocDiff(diff: DocDiff | ArrayDiff, at: DescPart[], out: UpdateDescription): void {
  const put = (parts: DescPart[], value: unknown) => {
    out.updatedFields[dottedOf(parts)] = value;
    noteAmbiguity(out, dottedOf(parts), parts);
  };
  if ('array' in diff) {
    if (diff.l !== undefined) {
      out.truncatedArrays.push({ field: dottedOf(at), newSize: diff.l });
      noteAmbiguity(out, dottedOf(at), at);
    }
    const index = (i: number): DescPart[] => [...at, { name: String(i), isIndex: true }];
    for (const [i, v] of diff.u) put(index(i), v);
    for (const [i, s] of diff.s) readDocDiff(s, index(i), out);
    return;
  }
  const field = (k: string): DescPart[] => [...at, { name: k, isIndex: false }];
  for (const k of diff.d) {
    out.removedFields.push(dottedOf(field(k)));
    noteAmbiguity(out, dottedOf(field(k)), field(k));
  }
  for (const [k, v] of diff.u) put(field(k), v);
  for (const [k, v] of diff.i) put(field(k), v);
  for (const [k, s] of diff.s) readDocDiff(s, field(k), out);
}
