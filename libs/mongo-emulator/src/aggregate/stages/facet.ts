import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { isDocument, typeName } from '../operators/types';
import type { StageBuilder } from './types';

export const facet: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec)) {
    throw new CommandError(
      15947,
      `the $facet specification must be a non-empty object, but found: ${typeName(spec)}`,
    );
  }
  if (Object.keys(spec).length === 0)
    throw new CommandError(40169, 'the $facet specification must be a non-empty object');
  for (const [name, sub] of Object.entries(spec)) {
    if (name.startsWith('$') || name.includes('.')) {
      throw new CommandError(
        40353,
        `FieldPath field names may not start with '$' or contain '.': ${name}`,
      );
    }
    if (!Array.isArray(sub)) {
      throw new CommandError(
        40170,
        `arguments to $facet must be arrays, ${name} is type ${typeName(sub)}`,
      );
    }
    ctx.runSub([], sub, 'facet'); // validate eagerly
  }
  return function* (input) {
    // Every facet sees the whole input, so it is buffered once.
    const docs = [...input];
    const out: Document = {};
    for (const [name, sub] of Object.entries(spec)) out[name] = [...ctx.runSub(docs, sub, 'facet')];
    yield out;
  };
};
