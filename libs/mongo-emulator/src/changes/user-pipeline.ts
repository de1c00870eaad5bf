import type { Document } from 'bson';
import { CommandError } from '../errors';
import { cloneExact } from '../bson/codec';
import { compareValues } from '../bson/compare';
import type { NodeServices } from '../node/node-services';
import { runPipeline } from '../aggregate/pipeline';
import { CatalogPipelineEnv } from '../storage/pipeline-env';

const ID_MODIFIED =
  'Encountered an event whose _id field, which contains the resume token, was modified by the pipeline. ' +
  'Modifying the _id field of an event makes it impossible to resume the stream from that point. ' +
  'Only transformations that retain the unmodified _id field are allowed.';

/** Applies the stages after $changeStream to one event (they are all per-document stages). */
export class UserPipeline {
  constructor(
    private readonly stages: Document[],
    private readonly node: NodeServices,
    private readonly db: string,
  ) {
    // Compile once up front so a malformed stage fails the aggregate, not a later getMore.
    if (stages.length > 0) Array.from(runPipeline([], stages, this.env()));
  }

  /** A fresh env per event: $$NOW / $$CLUSTER_TIME are evaluated when the event is processed. */
  private env(): CatalogPipelineEnv {
    return new CatalogPipelineEnv(this.node.catalog, this.db, undefined, undefined, {});
  }

  get empty(): boolean {
    return this.stages.length === 0;
  }

  /** The event's outputs (0 or 1 documents); throws 280 when a stage changed `_id`. */
  apply(event: Document): Document[] {
    if (this.stages.length === 0) return [event];
    // Events share sub-documents with the oplog; stages must never be able to mutate them.
    const input = cloneExact(event);
    const out = [...runPipeline([input], this.stages, this.env())];
    for (const doc of out) {
      if (
        !('_id' in doc) ||
        compareValues(doc._id, event._id) !== 0 ||
        !sameKeys(doc._id, event._id)
      ) {
        throw new CommandError('ChangeStreamFatalError', ID_MODIFIED, {
          labels: ['NonResumableChangeStreamError'],
        });
      }
    }
    return out;
  }
}

function sameKeys(a: unknown, b: unknown): boolean {
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null) return false;
  return Object.keys(a).join('\0') === Object.keys(b).join('\0');
}
