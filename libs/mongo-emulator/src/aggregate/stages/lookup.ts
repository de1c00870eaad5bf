import type { Document } from 'bson';
import { Long } from 'bson';
import { CommandError } from '../../errors';
import { compileFilter } from '../../query/matcher';
import { makeContext, resolvePath } from '../expressions';
import { isDocument, typeName } from '../operators/types';
import { namespaceDocuments, type StageBuilder } from './types';

/** Values a local field contributes to a $lookup equality match (arrays match any element). */
function localValues(doc: Document, path: string): unknown[] {
  const v = resolvePath(doc, path);
  if (v === undefined) return [null];
  if (!Array.isArray(v)) return [v];
  const flat = v.flat(Infinity);
  return flat.length ? flat : [];
}

export const lookup: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec))
    throw new CommandError(40319, 'the $lookup stage specification must be an object');
  for (const k of Object.keys(spec)) {
    if (!['from', 'as', 'localField', 'foreignField', 'let', 'pipeline'].includes(k)) {
      throw new CommandError(9, `unknown argument to $lookup: ${k}`);
    }
  }
  if (typeof spec.as !== 'string')
    throw new CommandError(9, "must specify 'as' field for a $lookup");
  const hasLocal = 'localField' in spec || 'foreignField' in spec;
  if (hasLocal && (typeof spec.localField !== 'string' || typeof spec.foreignField !== 'string')) {
    throw new CommandError(
      9,
      "$lookup requires both or neither of 'localField' and 'foreignField' to be specified",
    );
  }
  if (!hasLocal && !('pipeline' in spec)) {
    throw new CommandError(
      9,
      "$lookup requires either 'pipeline' or both 'localField' and 'foreignField' to be specified",
    );
  }
  if ('let' in spec && !('pipeline' in spec)) {
    throw new CommandError(9, "$lookup with 'let' must also specify 'pipeline'");
  }
  let db = ctx.env.db;
  let coll: string | undefined;
  if (typeof spec.from === 'string') coll = spec.from;
  else if (
    isDocument(spec.from) &&
    typeof spec.from.db === 'string' &&
    typeof spec.from.coll === 'string'
  ) {
    db = spec.from.db;
    coll = spec.from.coll;
  } else if (spec.from !== undefined) {
    throw new CommandError(
      ErrorFromType,
      `$lookup 'from' field must be a string, but found ${typeName(spec.from)}`,
    );
  }
  if (
    coll === undefined &&
    !(
      Array.isArray(spec.pipeline) &&
      isDocument(spec.pipeline[0]) &&
      '$documents' in spec.pipeline[0]
    )
  ) {
    throw new CommandError(9, "$lookup requires 'from' to be specified");
  }
  if ('pipeline' in spec && !Array.isArray(spec.pipeline)) {
    throw new CommandError(9, `'pipeline' option must be specified as an array`);
  }
  if ('let' in spec && !isDocument(spec.let))
    throw new CommandError(9, "$lookup argument 'let' must be an object");
  const as = spec.as;
  const letSpec = (spec.let ?? {}) as Document;
  const pipeline = (spec.pipeline ?? []) as Document[];
  const foreignField = spec.foreignField as string;
  const localField = spec.localField as string;
  // Validate the sub-pipeline once up front, as MongoDB parses it before running.
  ctx.runSub(
    [],
    pipeline,
    'lookup',
    Object.fromEntries(Object.keys(letSpec).map((k) => [k, null])),
  );

  return function* (input) {
    for (const doc of input) {
      const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
      const letVars: Record<string, unknown> = {};
      for (const [name, expr] of Object.entries(letSpec)) {
        const v = ec.evaluate(expr);
        letVars[name] = v === undefined ? null : v;
      }
      // `from` may be a view (MongoDB 3.4+): its base collection through the view's stages.
      let foreign: Iterable<Document> =
        coll === undefined ? [] : namespaceDocuments(ctx, db, coll, 'lookup');
      if (hasLocal) {
        // Equality with MongoDB's matcher semantics: arrays match element-wise, null matches missing.
        const pred = compileFilter({ [foreignField]: { $in: localValues(doc, localField) } });
        const source = foreign;
        foreign = (function* () {
          for (const f of source) if (pred(f)) yield f;
        })();
      }
      const matches = [...ctx.runSub(foreign, pipeline, 'lookup', letVars, coll)];
      yield setTopLevelPath(doc, as, matches);
    }
  };
};

const ErrorFromType = 'FailedToParse' as const;

/** Copy of `doc` with a (possibly dotted) path set, creating/overwriting documents on the way. */
export function setTopLevelPath(doc: Document, path: string, value: unknown): Document {
  const [head, ...rest] = path.split('.');
  const out: Document = { ...doc };
  out[head] = rest.length
    ? setTopLevelPath(isDocument(doc[head]) ? doc[head] : {}, rest.join('.'), value)
    : value;
  return out;
}

function removePath(doc: Document, path: string): Document {
  const [head, ...rest] = path.split('.');
  const out: Document = { ...doc };
  if (!rest.length) delete out[head];
  else if (isDocument(doc[head])) out[head] = removePath(doc[head], rest.join('.'));
  return out;
}

export const unwind: StageBuilder = (spec) => {
  let path: unknown;
  let indexField: unknown;
  let preserve: unknown = false;
  if (typeof spec === 'string') path = spec;
  else if (isDocument(spec)) {
    for (const k of Object.keys(spec)) {
      if (!['path', 'includeArrayIndex', 'preserveNullAndEmptyArrays'].includes(k)) {
        throw new CommandError(28811, `unrecognized option to $unwind stage: ${k}`);
      }
    }
    if (!('path' in spec)) throw new CommandError(28812, 'no path specified to $unwind stage');
    ({ path, includeArrayIndex: indexField, preserveNullAndEmptyArrays: preserve } = spec);
    if (preserve === undefined) preserve = false;
    if (typeof preserve !== 'boolean') {
      throw new CommandError(
        28809,
        `expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got ${typeName(preserve)}`,
      );
    }
    if (indexField !== undefined && (typeof indexField !== 'string' || indexField === '')) {
      throw new CommandError(
        28810,
        `expected a non-empty string for the includeArrayIndex option to $unwind stage, got ${typeName(indexField)}`,
      );
    }
    if (typeof indexField === 'string' && indexField.startsWith('$')) {
      throw new CommandError(
        28822,
        `includeArrayIndex option to $unwind stage should not be prefixed with a '$': ${indexField}`,
      );
    }
  } else {
    throw new CommandError(
      15981,
      `expected either a string or an object as specification for $unwind stage, got ${typeName(spec)}`,
    );
  }
  if (typeof path !== 'string')
    throw new CommandError(
      28808,
      `expected a string as the path for $unwind stage, got ${typeName(path)}`,
    );
  if (!path.startsWith('$')) {
    throw new CommandError(
      28818,
      `path option to $unwind stage should be prefixed with a '$': ${path}`,
    );
  }
  const field = path.slice(1);
  const idx = indexField as string | undefined;
  const keep = preserve as boolean;
  return function* (input) {
    for (const doc of input) {
      const v = getPlain(doc, field);
      if (Array.isArray(v) && v.length > 0) {
        for (let i = 0; i < v.length; i++) {
          const d = setTopLevelPath(doc, field, v[i]);
          yield idx ? setTopLevelPath(d, idx, Long.fromNumber(i)) : d;
        }
      } else if (Array.isArray(v) || v === undefined || v === null) {
        if (!keep) continue;
        // An empty array disappears; null stays null; the index is null.
        const d = Array.isArray(v) ? removePath(doc, field) : doc;
        yield idx ? setTopLevelPath(d, idx, null) : d;
      } else {
        // A non-array value behaves as a one-element array.
        yield idx ? setTopLevelPath(doc, idx, null) : doc;
      }
    }
  };
};

/** Path lookup through documents only (an array on the way means "not an unwindable path"). */
function getPlain(doc: Document, path: string): unknown {
  let cur: unknown = doc;
  for (const p of path.split('.')) {
    if (!isDocument(cur)) return undefined;
    cur = cur[p];
  }
  return cur;
}
