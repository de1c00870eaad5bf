import type { Document } from 'bson';
import { compareDocuments, isNumeric, toNumber } from '../../bson/compare';
import { isDocument } from '../../bson/paths';
import { formatDocument } from '../../query/format';
import { CommandError } from '../../errors';
import type { Collection } from '../../storage/collection';
import type { Index } from '../../storage/index';
import { collectionName, optArray, optDocument, optString, writeOptions } from '../crud/args';
import type { CommandContext, CommandDefinition } from '../types';
import { commandOptions } from './common';
import { checkValidationOptions } from './create';

function findIndex(coll: Collection, spec: Document): Index {
  let idx: Index | undefined;
  if (typeof spec.name === 'string') idx = coll.getIndex(spec.name);
  else if (isDocument(spec.keyPattern)) {
    const kp = spec.keyPattern;
    idx = coll.indexes.find((i) => compareDocuments(i.key, kp) === 0);
  } else {
    throw new CommandError(
      'InvalidOptions',
      'must specify either index name or key pattern for collMod',
    );
  }
  if (!idx) {
    const what =
      typeof spec.name === 'string' ? spec.name : formatDocument(spec.keyPattern as Document);
    throw new CommandError('IndexNotFound', `cannot find index ${what} for ns ${coll.ns}`);
  }
  return idx;
}

/** Applies `collMod.index` and returns the reply fields mongod reports (`hidden_old`, ...). */
function modifyIndex(
  coll: Collection,
  spec: Document,
): { reply: Document; before: Document; description: Document } {
  const idx = findIndex(coll, spec);
  const reply: Document = {};
  const before: Document = {};
  const description: Document = { name: idx.name };
  const next: Document = { ...idx.spec };
  if (spec.hidden !== undefined) {
    if (idx.isIdIndex) throw new CommandError('BadValue', "can't hide _id index");
    const hidden = Boolean(spec.hidden);
    const old = Boolean(idx.spec.hidden);
    before.hidden = old;
    description.hidden = hidden;
    if (old !== hidden) {
      reply.hidden_old = old;
      reply.hidden_new = hidden;
      if (hidden) next.hidden = true;
      else delete next.hidden;
    }
  }
  if (spec.expireAfterSeconds !== undefined) {
    if (!isNumeric(spec.expireAfterSeconds)) {
      throw new CommandError(
        'TypeMismatch',
        "BSON field 'collMod.index.expireAfterSeconds' is the wrong type, expected type 'long'",
      );
    }
    if (idx.spec.expireAfterSeconds === undefined) {
      throw new CommandError('InvalidOptions', 'no expireAfterSeconds field to update');
    }
    before.expireAfterSeconds = idx.spec.expireAfterSeconds;
    description.expireAfterSeconds = spec.expireAfterSeconds;
    reply.expireAfterSeconds_old = idx.spec.expireAfterSeconds;
    reply.expireAfterSeconds_new = spec.expireAfterSeconds;
    next.expireAfterSeconds = spec.expireAfterSeconds;
  }
  if (spec.prepareUnique !== undefined) {
    const v = Boolean(spec.prepareUnique);
    description.prepareUnique = v;
    if (Boolean(idx.spec.prepareUnique) !== v) {
      reply.prepareUnique_old = Boolean(idx.spec.prepareUnique);
      reply.prepareUnique_new = v;
      next.prepareUnique = v;
    }
  }
  if (spec.unique !== undefined) {
    if (spec.unique !== true)
      throw new CommandError('BadValue', "The field 'unique' can only be set to true");
    description.unique = true;
    if (!idx.unique) {
      if (!idx.spec.prepareUnique) {
        throw new CommandError(
          'InvalidOptions',
          "Cannot make index unique with 'prepareUnique=false'. Run collMod to set it first.",
        );
      }
      const violations = duplicateGroups(coll, idx);
      if (violations.length) {
        throw new CommandError(
          'CannotConvertIndexToUnique',
          'Cannot convert the index to unique. Please resolve conflicting documents before running collMod again.',
          {
            extra: { violations },
          },
        );
      }
      reply.unique_new = true;
      next.unique = true;
      delete next.prepareUnique;
    }
  }
  idx.spec = reorderSpec(next);
  return { reply, before, description };
}

/** Keeps the listIndexes field order stable: v, key, name, then options. */
function reorderSpec(spec: Document): Document {
  const { v, key, name, ...rest } = spec;
  return { v, key, name, ...rest };
}

function duplicateGroups(coll: Collection, idx: Index): Document[] {
  const groups: Document[] = [];
  let prev: unknown[] | undefined;
  let ids: unknown[] = [];
  const flush = () => {
    if (ids.length > 1) groups.push({ ids });
  };
  for (const [key, rid] of idx.tree.entries()) {
    const values = key.slice(0, -1);
    if (!prev || values.some((v, i) => idx.compareValue(v, prev![i]) !== 0)) {
      flush();
      ids = [];
      prev = values;
    }
    ids.push(coll.record(rid)?.doc._id);
  }
  flush();
  return groups;
}

export const collModCommand: CommandDefinition = {
  name: 'collMod',
  access: 'write',
  userWrite: true,
  run(ctx: CommandContext) {
    const name = collectionName(ctx);
    const catalog = ctx.node.catalog;
    const ns = catalog.lookup(ctx.db, name);
    if (!ns) throw new CommandError('NamespaceNotFound', `ns does not exist: ${ctx.db}.${name}`);
    checkValidationOptions(ctx);
    const indexSpec = optDocument(ctx, 'index');
    const viewOn = optString(ctx, 'viewOn');
    const pipeline = optArray(ctx, 'pipeline');
    const changes = commandOptions(ctx.cmd, ['collMod', 'index']);
    const wopts = writeOptions(ctx);

    if (ns.kind === 'view') {
      if (indexSpec || Object.keys(changes).some((k) => k !== 'viewOn' && k !== 'pipeline')) {
        throw new CommandError(
          'InvalidOptions',
          `option not supported on a view: ${Object.keys(changes).join(', ')}`,
        );
      }
      if ((viewOn === undefined) !== (pipeline === undefined)) {
        throw new CommandError(
          'InvalidOptions',
          "must specify both 'viewOn' and 'pipeline' when modifying a view",
        );
      }
      const before = { ...ns.options };
      if (viewOn !== undefined) ns.options = { ...ns.options, viewOn, pipeline };
      catalog.logModify(ns, { viewOn, pipeline }, { collectionOptions: before }, wopts);
      return { ok: 1 };
    }

    if (viewOn !== undefined || pipeline !== undefined) {
      throw new CommandError(
        'InvalidOptions',
        `option only supported on a view: ${viewOn !== undefined ? 'viewOn' : 'pipeline'}`,
      );
    }
    const coll = ns;
    const collectionOptionsBefore = { ...coll.options };
    const reply: Document = {};
    const description: Document = { ...changes };
    let indexOptionsBefore: Document | undefined;
    if (indexSpec) {
      const r = modifyIndex(coll, indexSpec);
      Object.assign(reply, r.reply);
      description.index = r.description;
      indexOptionsBefore = r.before;
    }
    const next = { ...coll.options };
    for (const key of [
      'validator',
      'validationLevel',
      'validationAction',
      'changeStreamPreAndPostImages',
      'expireAfterSeconds',
    ]) {
      if (changes[key] !== undefined) next[key] = changes[key];
    }
    if (changes.validator !== undefined && Object.keys(changes.validator as Document).length === 0)
      delete next.validator;
    coll.options = next;
    coll.compileValidator();
    if (changes.expireAfterSeconds !== undefined && !isNumeric(changes.expireAfterSeconds)) {
      throw new CommandError('TypeMismatch', 'expireAfterSeconds must be a number');
    }
    if (changes.expireAfterSeconds !== undefined) toNumber(changes.expireAfterSeconds);
    const stateBeforeChange: Document = { collectionOptions: collectionOptionsBefore };
    if (indexOptionsBefore) stateBeforeChange.indexOptions = indexOptionsBefore;
    catalog.logModify(coll, description, stateBeforeChange, wopts);
    return { ...reply, ok: 1 };
  },
};
