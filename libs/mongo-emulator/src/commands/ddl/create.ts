import type { Document } from 'bson';
import { bsonTypeOf, compareDocuments, isNumeric, toNumber } from '../../bson/compare';
import { CommandError } from '../../errors';
import { compileFilter } from '../../query/matcher';
import { checkCollectionName } from '../../storage/catalog';
import {
  collectionName,
  optArray,
  optBool,
  optCollation,
  optDocument,
  optString,
  writeOptions,
} from '../crud/args';
import type { CommandDefinition } from '../types';
import { checkTransactionalDdl, commandOptions } from './common';

const VALIDATION_LEVELS = ['off', 'strict', 'moderate'];
const VALIDATION_ACTIONS = ['error', 'warn'];

/** Checks the collection options create and collMod share (validator/level/action). */
export function checkValidationOptions(ctx: Parameters<CommandDefinition['run']>[0]): void {
  const validator = optDocument(ctx, 'validator');
  if (validator) compileFilter(validator);
  const level = optString(ctx, 'validationLevel');
  if (level !== undefined && !VALIDATION_LEVELS.includes(level)) {
    throw new CommandError(
      'BadValue',
      `Enumeration value '${level}' for field '${ctx.name}.validationLevel' is not a valid value.`,
    );
  }
  const action = optString(ctx, 'validationAction');
  if (action !== undefined && !VALIDATION_ACTIONS.includes(action)) {
    throw new CommandError(
      'BadValue',
      `Enumeration value '${action}' for field '${ctx.name}.validationAction' is not a valid value.`,
    );
  }
  const images = optDocument(ctx, 'changeStreamPreAndPostImages');
  if (images && typeof images.enabled !== 'boolean') {
    throw new CommandError(
      40414 as number,
      "BSON field 'changeStreamPreAndPostImages.enabled' is missing but a required field",
    );
  }
}

export const createCommand: CommandDefinition = {
  name: 'create',
  access: 'write',
  userWrite: true,
  run(ctx) {
    const name = collectionName(ctx);
    checkCollectionName(ctx.db, name);
    checkTransactionalDdl(ctx);
    const capped = optBool(ctx, 'capped') ?? false;
    const size = ctx.cmd.size;
    if (size !== undefined && !isNumeric(size)) {
      throw new CommandError(
        'TypeMismatch',
        `BSON field 'create.size' is the wrong type '${bsonTypeOf(size)}', expected types '[long, int, decimal, double]'`,
      );
    }
    if (capped && size === undefined) {
      throw new CommandError(
        'InvalidOptions',
        "the 'size' field is required when 'capped' is true",
      );
    }
    if (capped && toNumber(size) <= 0)
      throw new CommandError('BadValue', 'size has to be a positive number');
    const viewOn = optString(ctx, 'viewOn');
    const pipeline = optArray(ctx, 'pipeline');
    optCollation(ctx);
    checkValidationOptions(ctx);
    if (ctx.cmd.clusteredIndex !== undefined) {
      throw new CommandError('InvalidOptions', 'clusteredIndex is not supported by the emulator');
    }
    if (ctx.cmd.timeseries !== undefined) {
      throw new CommandError(
        'InvalidOptions',
        'time-series collections are not supported by the emulator',
      );
    }
    if (pipeline && viewOn === undefined) {
      throw new CommandError('BadValue', "'pipeline' requires 'viewOn' to also be specified");
    }
    const options = commandOptions(ctx.cmd, ['create']);
    const catalog = ctx.node.catalog;
    const existing = catalog.lookup(ctx.db, name);
    if (existing) {
      // MongoDB 7.0 makes create idempotent when the options are identical, except inside a
      // transaction (jstests/core/txns/create_collection.js expects NamespaceExists there).
      if (
        !ctx.txn &&
        compareDocuments(existing.options, options) === 0 &&
        sameOrder(existing.options, options)
      )
        return { ok: 1 };
      throw new CommandError('NamespaceExists', `Collection ${ctx.db}.${name} already exists.`);
    }
    const wopts = writeOptions(ctx);
    if (viewOn !== undefined) {
      if (capped)
        throw new CommandError('InvalidOptions', 'Cannot create a view with the capped option');
      checkCollectionName(ctx.db, viewOn);
      for (const stage of pipeline ?? []) {
        if (bsonTypeOf(stage) !== 'object')
          throw new CommandError('TypeMismatch', 'Each element of the pipeline must be an object');
      }
      const viewOptions: Document = { viewOn, pipeline: pipeline ?? [] };
      if (options.collation) viewOptions.collation = options.collation;
      catalog.createView(ctx.db, name, viewOptions, wopts);
      return { ok: 1 };
    }
    catalog.createCollection(ctx.db, name, options, wopts);
    return { ok: 1 };
  },
};

function sameOrder(a: Document, b: Document): boolean {
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k, i) => k === kb[i]);
}
