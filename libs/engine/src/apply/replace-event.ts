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
 */
export function translateReplace(event: ChangeEvent): WriteStep[] {
  const documentKey = requireKey(event);
  const replace: WriteStep = {
    kind: 'replace',
    filter: documentKey,
    replacement: requireFullDocument(event),
  };
  if (Object.keys(documentKey).some((f) => f !== '_id')) {
    return [{ kind: 'delete', filter: { _id: documentKey._id } }, replace];
  }
  return [replace];
}
