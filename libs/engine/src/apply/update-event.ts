import type { Document } from 'bson';
import { toNumber, type ChangeEvent, type UpdateDescription } from './change-event';
import { requireKey } from './insert-event';
import { keepsFieldOrder } from './update-in-memory';
import { compareFieldNames, pathComponents, pathsConflict } from './update-paths';
import type { WriteStep } from './write-step';

export interface UpdateTranslationOptions {
  /**
   * Fall back to a lookup when one event adds sibling fields out of MongoDB's operator order
   * (only pipeline-style updates do that): `$set` would append them in lexicographic order and
   * the destination's field order — which must match the source's — would differ.
   * Default true.
   */
  strictFieldOrder?: boolean;
  /**
   * The source is known to send `updateDescription.disambiguatedPaths` whenever a path is
   * ambiguous (MongoDB 6.1+ with showExpandedEvents, 8.2+), so an event without the field has
   * no ambiguous path. Default false: without the field, every dotted path may name a
   * top-level field containing dots ("a.b"), and the update falls back to a lookup.
   */
  sourceDisambiguates?: boolean;
  /** A per-shard worker: see TranslationOptions.perShard (a shard-key change retires, never removes by `_id`). */
  perShard?: boolean;
}

/**
 * update → `updateOne(documentKey, …, {upsert: false})` rebuilt from the updateDescription:
 * `$push {$each: [], $slice: newSize}` for each truncated array, `$set` of updatedFields (values
 * reused as decoded, so an Int32 stays Int32), `$unset` of removedFields.
 *
 * Order: MongoDB reports truncation separately from updatedFields and its semantics are
 * "truncate, then set" (updatedFields may name elements inside the truncated array, e.g.
 * `arr` truncated to 2 plus `arr.1.b`). A truncation and a `$set` under the same array cannot
 * share one update (path conflict), so they become two steps, truncation first.
 *
 * No upsert: a missing document means the copy has not written it yet (it will read a state at
 * least this new) or a later delete already ran; creating a partial document would be wrong.
 *
 * Lookup fallback — the step becomes "re-read from the source and replace" — exactly when the
 * description cannot be replayed faithfully:
 * - a path has no dotted spelling (field name with a dot, `$` prefix, or empty; detected through
 *   `disambiguatedPaths`, which MongoDB 6.1+ sends for every ambiguous path);
 * - the event has no `disambiguatedPaths` at all (sources before 6.1, or no showExpandedEvents)
 *   and a path has a dot: `{"a.b": v}` may be a top-level field named "a.b", which `$set` would
 *   turn into a nested field — unless `sourceDisambiguates` says the absence proves nothing is
 *   ambiguous;
 * - paths of the description conflict with each other (never produced by MongoDB; defensive);
 * - sibling fields are reported out of operator order (see `strictFieldOrder`);
 * - a value set holds an embedded document with a field named like an array index ("1",
 *   "2024"): decoded into a JS object its fields are no longer in the source's order, while
 *   the lookup writes the source's bytes.
 * The lane also falls back to a lookup when the destination rejects the update for the shape of
 * a newer state (e.g. a replayed `$set a.b` where `a` is now a scalar; see write-lane.ts). A lookup returns a state at least as new
 * as the event; the events after it are applied on top, so the document still converges.
 */
export function translateUpdate(
  event: ChangeEvent,
  options: UpdateTranslationOptions = {},
): WriteStep[] {
  const documentKey = requireKey(event);
  const desc = event.updateDescription;
  if (!desc) return [{ kind: 'lookup', documentKey }];
  if (changesShardKey(documentKey, desc)) {
    return options.perShard ? retireAndLookup(documentKey) : moveByLookup(documentKey);
  }
  const lookup: WriteStep[] = [{ kind: 'lookup', documentKey }];
  // null is treated like absence: no map means no path was resolved by the source.
  const disambiguated = desc.disambiguatedPaths ?? undefined;
  const trusted = options.sourceDisambiguates === true;

  const truncations: Array<{ path: string; parts: string[]; newSize: number }> = [];
  for (const t of desc.truncatedArrays ?? []) {
    const parts = pathComponents(t.field, disambiguated, trusted);
    if (!parts) return lookup;
    truncations.push({ path: t.field, parts, newSize: toNumber(t.newSize) });
  }

  const updated = desc.updatedFields ?? {};
  const setPaths: string[][] = [];
  for (const path of Object.keys(updated)) {
    const parts = pathComponents(path, disambiguated, trusted);
    if (!parts) return lookup;
    setPaths.push(parts);
  }
  const removed = desc.removedFields ?? [];
  const unsetPaths: string[][] = [];
  for (const path of removed) {
    const parts = pathComponents(path, disambiguated, trusted);
    if (!parts) return lookup;
    unsetPaths.push(parts);
  }
  if (hasInternalConflict([...setPaths, ...unsetPaths])) return lookup;
  if (options.strictFieldOrder !== false && !siblingsInOperatorOrder(setPaths)) return lookup;
  // A value decoded into a JS object has lost the order of index-like field names ("2024").
  if (!Object.values(updated).every(keepsFieldOrder)) return lookup;

  // Truncations first, grouped into as few steps as their paths allow.
  const steps: Array<{ paths: string[][]; update: Document }> = [];
  for (const t of truncations) {
    let step = steps.find((s) => !s.paths.some((p) => pathsConflict(p, t.parts)));
    if (!step) {
      step = { paths: [], update: { $push: {} } };
      steps.push(step);
    }
    step.paths.push(t.parts);
    (step.update.$push as Document)[t.path] = { $each: [], $slice: t.newSize };
  }

  const setUnset: Document = {};
  if (setPaths.length > 0) setUnset.$set = updated;
  if (unsetPaths.length > 0) setUnset.$unset = Object.fromEntries(removed.map((p) => [p, '']));
  if (Object.keys(setUnset).length > 0) {
    const paths = [...setPaths, ...unsetPaths];
    const last = steps[steps.length - 1];
    // Only the LAST truncation step may absorb $set/$unset: it keeps "truncate, then set".
    if (last && !last.paths.some((p) => paths.some((q) => pathsConflict(p, q)))) {
      Object.assign(last.update, setUnset);
      last.paths.push(...paths);
    } else {
      steps.push({ paths, update: setUnset });
    }
  }

  return steps.map((s) => ({ kind: 'update', filter: documentKey, update: s.update }));
}

/**
 * On a sharded source the documentKey holds the shard-key fields AFTER the update (MongoDB
 * builds it from the new document), so an update that changed one of them names a key the
 * destination does not hold yet: replayed as is it would match nothing.
 */
function changesShardKey(documentKey: Document, desc: UpdateDescription): boolean {
  const keyFields = Object.keys(documentKey).filter((f) => f !== '_id');
  if (keyFields.length === 0) return false;
  const paths = [
    ...Object.keys(desc.updatedFields ?? {}),
    ...(desc.removedFields ?? []),
    ...(desc.truncatedArrays ?? []).map((t) => t.field),
  ];
  return paths.some((p) =>
    keyFields.some((k) => p === k || k.startsWith(`${p}.`) || p.startsWith(`${k}.`)),
  );
}

/**
 * A per-shard worker's document whose shard key changed on its shard: the version it held under
 * the old key is retired (only its own shard's versions: see write-step.ts), then the document
 * under its new key is read from the source by its full key. What the lookup finds carries that
 * key, which this shard owns; when the document has changed key again or left the shard since,
 * the lookup finds nothing and the events after this one, on this shard's stream, bring it to
 * its later state.
 */
export function retireAndLookup(documentKey: Document): WriteStep[] {
  return [
    { kind: 'retire', documentKey },
    { kind: 'lookup', documentKey },
  ];
}

/**
 * A document whose shard key changed (or may have: a replacement): removed by `_id` wherever
 * the destination holds it, then written again from the source's current version (the lookup
 * names the new key, so a sharded destination routes it to its new owner).
 */
export function moveByLookup(documentKey: Document): WriteStep[] {
  const byId = { _id: documentKey._id };
  return [
    { kind: 'delete', filter: byId },
    { kind: 'lookup', documentKey: byId },
  ];
}

function hasInternalConflict(paths: string[][]): boolean {
  for (let i = 0; i < paths.length; i++) {
    for (let j = i + 1; j < paths.length; j++) if (pathsConflict(paths[i], paths[j])) return true;
  }
  return false;
}

/** Sibling fields (same parent) must appear in the order a `$set` would create them. */
function siblingsInOperatorOrder(paths: string[][]): boolean {
  const lastChildOf = new Map<string, string>();
  for (const parts of paths) {
    const parent = parts.slice(0, -1).join('\u0000');
    const name = parts[parts.length - 1];
    const previous = lastChildOf.get(parent);
    if (previous !== undefined && compareFieldNames(previous, name) > 0) return false;
    lastChildOf.set(parent, name);
  }
  return true;
}
