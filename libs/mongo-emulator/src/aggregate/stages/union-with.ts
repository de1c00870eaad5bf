import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { isDocument, typeName } from '../operators/types';
import { namespaceDocuments, type StageBuilder } from './types';

const FAILED_TO_PARSE = 9;
const UNKNOWN_FIELD = 40415;

/**
 * `$unionWith` (MongoDB 4.4+): the stage's input, then the documents of another collection of
 * the same database run through an optional sub-pipeline (`{ $unionWith: "coll" }` or
 * `{ $unionWith: { coll, pipeline } }`; without `coll` the pipeline must start with
 * `$documents`). A missing collection adds nothing. Its sub-pipeline may not write ($out,
 * $merge: 31441). MongoDB leaves the order of the combined output unspecified; this one emits
 * the input first, as the server does when nothing reorders it.
 */
export const unionWith: StageBuilder = (spec, ctx) => {
  let coll: string | undefined;
  let pipeline: Document[] = [];
  if (typeof spec === 'string') {
    coll = spec;
  } else if (isDocument(spec)) {
    for (const key of Object.keys(spec)) {
      if (key !== 'coll' && key !== 'pipeline') {
        throw new CommandError(
          UNKNOWN_FIELD,
          `BSON field '$unionWith.${key}' is an unknown field.`,
        );
      }
    }
    if ('coll' in spec) {
      if (typeof spec.coll !== 'string') {
        throw new CommandError(
          14,
          `BSON field '$unionWith.coll' is the wrong type '${typeName(spec.coll)}', expected type 'string'`,
        );
      }
      coll = spec.coll;
    }
    if ('pipeline' in spec) {
      if (!Array.isArray(spec.pipeline)) {
        throw new CommandError(
          14,
          `BSON field '$unionWith.pipeline' is the wrong type '${typeName(spec.pipeline)}', expected type 'array'`,
        );
      }
      pipeline = spec.pipeline as Document[];
    }
    if (coll === undefined) {
      const first = pipeline[0];
      if (!isDocument(first) || !('$documents' in first)) {
        throw new CommandError(
          FAILED_TO_PARSE,
          '$unionWith stage without explicit collection must have a pipeline with $documents as first stage',
        );
      }
    }
  } else {
    throw new CommandError(
      FAILED_TO_PARSE,
      `the $unionWith stage specification must be an object or string, but found ${typeName(spec)}`,
    );
  }
  // Parsed (and its stages checked) before any document is read, as the server does.
  ctx.runSub([], pipeline, 'unionWith', undefined, coll);
  const db = ctx.env.db;
  return function* (input) {
    yield* input;
    // `coll` may be a view (MongoDB 4.4+): its base collection through the view's stages.
    const documents = coll === undefined ? [] : namespaceDocuments(ctx, db, coll, 'unionWith');
    yield* ctx.runSub(documents, pipeline, 'unionWith', undefined, coll);
  };
};
