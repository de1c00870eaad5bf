import type { Binary, Document } from 'bson';
import type { NodeServices } from '../node/node-services';
import type { OplogEntry } from '../oplog/oplog-entry';
import { compareTimestamps } from '../clock/cluster-clock';
import { valuesEqual } from '../bson/compare';

/**
 * Whether a collection recorded pre-images when a write happened. MongoDB writes a pre-image
 * only while the collection has `changeStreamPreAndPostImages: {enabled: true}`; the emulator's
 * oplog carries `preImage` on every update/replace/delete, so availability is derived from the
 * collection's create/collMod history: the latest `create`/`modify` entry at or before the write
 * that mentions the option decides. When that history was truncated, the collection's current
 * options are the best remaining evidence.
 */
export class PreImageTracker {
  /** Per collection UUID: the option's value as of the newest create/modify entry seen. */
  private readonly known = new Map<string, boolean>();

  constructor(private readonly node: NodeServices) {}

  /** Feed every oplog entry the stream scans, in order, so the state follows collMods. */
  observe(entry: OplogEntry): void {
    const setting = settingOf(entry);
    if (setting !== undefined && entry.uuid) this.known.set(uuidKey(entry.uuid), setting);
  }

  /** Whether the write in `entry` recorded images (call after `observe(entry)`). */
  recordedImages(entry: OplogEntry): boolean {
    if (!entry.uuid) return false;
    const key = uuidKey(entry.uuid);
    let value = this.known.get(key);
    if (value === undefined) {
      value = this.fromHistory(entry) ?? this.fromCatalog(entry) ?? false;
      this.known.set(key, value);
    }
    return value;
  }

  /** Scans the retained oplog once for this collection's latest setting before `entry`. */
  private fromHistory(entry: OplogEntry): boolean | undefined {
    const key = uuidKey(entry.uuid as Binary);
    let found: boolean | undefined;
    for (const e of this.node.oplog.entriesAfter(undefined)) {
      if (compareTimestamps(e.ts, entry.ts) > 0) break;
      if (!e.uuid || uuidKey(e.uuid) !== key) continue;
      const setting = settingOf(e);
      if (setting !== undefined) found = setting;
    }
    return found;
  }

  private fromCatalog(entry: OplogEntry): boolean | undefined {
    if (!entry.coll) return undefined;
    const coll = this.node.catalog.getCollection(entry.db, entry.coll);
    if (!coll || uuidKey(coll.uuid) !== uuidKey(entry.uuid as Binary)) return undefined;
    return enabledIn(coll.options);
  }
}

function settingOf(entry: OplogEntry): boolean | undefined {
  if (entry.op !== 'create' && entry.op !== 'modify') return undefined;
  const desc = entry.operationDescription ?? {};
  if (entry.op === 'create') return enabledIn(desc) ?? false;
  return enabledIn(desc);
}

function enabledIn(options: Document): boolean | undefined {
  const opt = options.changeStreamPreAndPostImages as Document | undefined;
  if (opt === undefined || opt === null || typeof opt !== 'object') return undefined;
  return Boolean(opt.enabled);
}

export function uuidKey(uuid: Binary): string {
  return Buffer.from(uuid.buffer.subarray(0, uuid.position)).toString('hex');
}

/**
 * fullDocument: 'updateLookup': the document as it is NOW in the event's collection, matched by
 * the full documentKey, and only if the collection is still the same one (same UUID) — after a
 * drop/recreate MongoDB returns null.
 */
export function lookupCurrentDocument(node: NodeServices, entry: OplogEntry): Document | null {
  if (!entry.coll || !entry.documentKey) return null;
  const coll = node.catalog.getCollection(entry.db, entry.coll);
  if (!coll || (entry.uuid && uuidKey(coll.uuid) !== uuidKey(entry.uuid))) return null;
  const doc = node.catalog.findById(entry.db, entry.coll, entry.documentKey._id);
  if (!doc) return null;
  // Sharded collections' document keys carry shard-key fields too; they must still match.
  for (const [field, value] of Object.entries(entry.documentKey)) {
    if (field !== '_id' && !valuesEqual(doc[field], value)) return null;
  }
  return doc;
}
