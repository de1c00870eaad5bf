import { ObjectId, type Document } from 'bson';
import { CommandError } from '../../errors';
import { makeContext } from '../expressions';
import { groupKey } from './group-key';
import { isDocument, typeName } from '../operators/types';
import type { MergeWhenMatched, MergeWhenNotMatched } from '../pipeline-env';
import type { StageBuilder } from './types';

function target(stage: string, spec: unknown, defaultDb: string): { db: string; coll: string } {
  if (typeof spec === 'string') return { db: defaultDb, coll: spec };
  if (isDocument(spec) && typeof spec.coll === 'string') {
    return { db: typeof spec.db === 'string' ? spec.db : defaultDb, coll: spec.coll };
  }
  throw new CommandError(
    stage === '$out' ? 16990 : 51178,
    `${stage} only supports a string or object argument, but found ${typeName(spec)}`,
  );
}

/** Documents written by $out/$merge get an ObjectId _id when they have none (first field). */
function withId(doc: Document): Document {
  return '_id' in doc ? doc : { _id: new ObjectId(), ...doc };
}

export const out: StageBuilder = (spec, ctx) => {
  const { db, coll } = target('$out', spec, ctx.env.db);
  if (coll === '' || coll.includes('$') || coll.startsWith('system.')) {
    throw new CommandError('InvalidNamespace', `Invalid $out target namespace, ${db}.${coll}`);
  }
  // A sink writes when iterated and yields nothing, like MongoDB's $out/$merge.
  // eslint-disable-next-line require-yield
  return function* (input) {
    const docs: Document[] = [];
    const seen = new Set<string>();
    for (const d of input) {
      const doc = withId(d);
      const key = groupKey(doc._id);
      if (seen.has(key)) {
        throw new CommandError(
          'DuplicateKey',
          `E11000 duplicate key error collection: ${db}.${coll} index: _id_ dup key: { _id: ${JSON.stringify(doc._id)} }`,
          {
            extra: { keyPattern: { _id: 1 }, keyValue: { _id: doc._id } },
          },
        );
      }
      seen.add(key);
      docs.push(doc);
    }
    ctx.env.replaceCollectionContents(db, coll, docs);
  };
};

const MATCHED = ['replace', 'keepExisting', 'merge', 'fail'];
const NOT_MATCHED = ['insert', 'discard', 'fail'];

export const merge: StageBuilder = (spec, ctx) => {
  const s: Document = typeof spec === 'string' ? { into: spec } : isDocument(spec) ? spec : {};
  if (!isDocument(spec) && typeof spec !== 'string') {
    throw new CommandError(
      51182,
      `$merge only supports a string or object argument, but found ${typeName(spec)}`,
    );
  }
  for (const k of Object.keys(s)) {
    if (!['into', 'on', 'let', 'whenMatched', 'whenNotMatched'].includes(k)) {
      throw new CommandError(40415, `BSON field '$merge.${k}' is an unknown field.`);
    }
  }
  if (!('into' in s))
    throw new CommandError(40414, "BSON field '$merge.into' is missing but a required field");
  const { db, coll } = target('$merge', s.into, ctx.env.db);
  const on: string[] =
    s.on === undefined ? ['_id'] : typeof s.on === 'string' ? [s.on] : (s.on as string[]);
  if (!Array.isArray(on) || on.length === 0 || on.some((f) => typeof f !== 'string')) {
    throw new CommandError(
      51186,
      "$merge 'on' field must be either a string or an array of strings",
    );
  }
  const whenMatched = (s.whenMatched ?? 'merge') as MergeWhenMatched;
  const whenNotMatched = (s.whenNotMatched ?? 'insert') as MergeWhenNotMatched;
  if (!Array.isArray(whenMatched) && !MATCHED.includes(whenMatched)) {
    throw new CommandError(
      'BadValue',
      `Enumeration value '${String(whenMatched)}' for field '$merge.whenMatched' is not a valid value.`,
    );
  }
  if (!NOT_MATCHED.includes(whenNotMatched)) {
    throw new CommandError(
      'BadValue',
      `Enumeration value '${String(whenNotMatched)}' for field '$merge.whenNotMatched' is not a valid value.`,
    );
  }
  if ('let' in s && !Array.isArray(whenMatched)) {
    throw new CommandError(
      51199,
      "Cannot use 'let' variables with 'whenMatched: " + String(whenMatched) + "' mode",
    );
  }
  const letSpec = (s.let ?? { new: '$$ROOT' }) as Document;

  // A sink writes when iterated and yields nothing, like MongoDB's $out/$merge.
  // eslint-disable-next-line require-yield
  return function* (input) {
    for (const d of input) {
      const doc = on.includes('_id') ? withId(d) : d;
      const equality: Document = {};
      for (const f of on) {
        const v = f.split('.').reduce<unknown>((o, p) => (isDocument(o) ? o[p] : undefined), doc);
        if (v === undefined || v === null || Array.isArray(v)) {
          throw new CommandError(
            51132,
            `$merge write error: 'on' field '${f}' cannot be missing, null, undefined or an array`,
          );
        }
        equality[f] = v;
      }
      const existing = ctx.env.findOne(db, coll, equality);
      if (!existing) {
        if (whenNotMatched === 'insert') ctx.env.insertOne(db, coll, withId(doc));
        else if (whenNotMatched === 'fail') {
          throw new CommandError(
            13113,
            '$merge could not find a matching document in the target collection for at least one document in the source collection',
          );
        }
        continue;
      }
      let replacement: Document | undefined;
      if (whenMatched === 'replace') replacement = doc;
      else if (whenMatched === 'merge') replacement = { ...existing, ...doc };
      else if (whenMatched === 'fail') {
        throw new CommandError(
          'DuplicateKey',
          `E11000 duplicate key error collection: ${db}.${coll}`,
          {
            extra: { keyPattern: Object.fromEntries(on.map((f) => [f, 1])), keyValue: equality },
          },
        );
      } else if (Array.isArray(whenMatched)) {
        const ec = makeContext(doc, { ...ctx.vars, ROOT: doc, CURRENT: doc });
        const vars = Object.fromEntries(
          Object.entries(letSpec).map(([k, e]) => [k, ec.evaluate(e) ?? null]),
        );
        const results = [...ctx.runSub([existing], whenMatched, 'mergeUpdate', vars)];
        replacement = results[0];
      }
      if (replacement) {
        // The target's _id is immutable: keep it when the replacement has none.
        const r = '_id' in replacement ? replacement : { _id: existing._id, ...replacement };
        ctx.env.replaceOne(db, coll, existing, r);
      }
    }
  };
};
