import type { ChangeEvent } from './change-event';
import { requireFullDocument, requireKey } from './insert-event';
import type { WriteStep } from './write-step';

/**
 * replace → replace-with-upsert: upsert because the document may not be on the destination yet
 * (the copy has not reached it, or it was recreated at the source).
 *
 * On a sharded source (a documentKey with shard-key fields) a replacement may have changed the
 * shard key, and the event cannot tell: its documentKey names the NEW key. The document is then
 * first removed by `_id` (wherever the destination holds it) and upserted under its new key.
 *
 * A per-shard worker (`perShard`) must not remove by `_id` what another worker wrote: the
 * document may have moved to another shard since, and that shard's worker may already have
 * written the newer version. It retires only the versions its own shard owns under another key
 * (see write-step.ts), then upserts the replacement under its full key.
 */
export function translateReplace(event: ChangeEvent, perShard = false): WriteStep[] {
  const documentKey = requireKey(event);
  const replace: WriteStep = {
    kind: 'replace',
    filter: documentKey,
    replacement: requireFullDocument(event),
  };
  if (Object.keys(documentKey).some((f) => f !== '_id')) {
    if (perShard) return [{ kind: 'retire', documentKey }, replace];
    return [{ kind: 'delete', filter: { _id: documentKey._id } }, replace];
  }
  return [replace];
}
