import type { ChangeEvent } from './change-event';
import { requireFullDocument, requireKey } from './insert-event';
import { moveByLookup } from './update-event';
import type { WriteStep } from './write-step';

/**
 * replace → replace-with-upsert: upsert because the document may not be on the destination yet
 * (the copy has not reached it, or it was recreated at the source).
 *
 * On a sharded source (a documentKey with shard-key fields) a replacement may have changed the
 * shard key, and the event cannot tell: its documentKey names the NEW key. The document is then
 * first removed by `_id` (wherever the destination holds it) and upserted under its new key.
 *
 * A per-shard worker (`perShard`) must not remove by `_id` what it wrote under another key: the
 * document may have moved to another shard since, and that shard's worker may already have
 * written the newer version. It removes every version by `_id` and writes the source's CURRENT
 * version (a lookup), which is at least as new as anything any worker wrote; the events after
 * this one, on every shard, then apply on top of it, by their full document keys.
 */
export function translateReplace(event: ChangeEvent, perShard = false): WriteStep[] {
  const documentKey = requireKey(event);
  const replace: WriteStep = {
    kind: 'replace',
    filter: documentKey,
    replacement: requireFullDocument(event),
  };
  if (Object.keys(documentKey).some((f) => f !== '_id')) {
    if (perShard) return moveByLookup(documentKey);
    return [{ kind: 'delete', filter: { _id: documentKey._id } }, replace];
  }
  return [replace];
}
