import type { Document } from 'bson';
import { CommandError } from '../../errors';
import { makeContext } from '../expressions';
import { isDocument, typeName } from '../operators/types';
import type { StageBuilder } from './types';

/** $collStats: one document for the aggregated collection (must be the first stage). */
export const collStats: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec)) {
    throw new CommandError(
      5447000,
      `$collStats must take a nested object but found: ${typeName(spec)}`,
    );
  }
  for (const k of Object.keys(spec)) {
    if (!['count', 'storageStats', 'latencyStats', 'queryExecStats'].includes(k)) {
      throw new CommandError(40415, `BSON field '$collStats.${k}' is an unknown field.`);
    }
  }
  return function* () {
    const { db, coll } = ctx.env;
    if (coll === undefined) {
      throw new CommandError(
        'InvalidNamespace',
        '$collStats must be run against a collection namespace',
      );
    }
    const ns = `${db}.${coll}`;
    const stats = ctx.env.collStats(db, coll);
    const out: Document = { ns, host: ctx.env.host ?? 'localhost:27017', localTime: ctx.env.now() };
    if ('latencyStats' in spec) out.latencyStats = {};
    if ('storageStats' in spec) {
      if (!stats) {
        throw new CommandError(
          'NamespaceNotFound',
          `Unable to retrieve storageStats in $collStats stage :: caused by :: Collection [${ns}] not found.`,
        );
      }
      out.storageStats = stats;
    }
    if ('count' in spec) {
      if (!stats) {
        throw new CommandError(
          'NamespaceNotFound',
          `Unable to retrieve count in $collStats stage :: caused by :: Collection [${ns}] not found.`,
        );
      }
      out.count = stats.count;
    }
    if ('queryExecStats' in spec) out.queryExecStats = {};
    yield out;
  };
};

export const indexStats: StageBuilder = (spec, ctx) => {
  if (!isDocument(spec) || Object.keys(spec).length !== 0) {
    throw new CommandError(28803, 'The $indexStats stage specification must be an empty object');
  }
  return function* () {
    const { db, coll } = ctx.env;
    if (coll === undefined) return;
    yield* ctx.env.indexStats?.(db, coll) ?? [];
  };
};

/** $documents: literal documents for `{aggregate: 1}` pipelines (and $lookup sub-pipelines). */
export const documents: StageBuilder = (spec, ctx) => {
  if (ctx.scope === 'top' && ctx.env.coll !== undefined) {
    throw new CommandError('InvalidNamespace', '$documents can only be run with {aggregate: 1}');
  }
  return function* () {
    const v = makeContext({}, { ...ctx.vars, ROOT: {}, CURRENT: {} }).evaluate(spec);
    if (!Array.isArray(v)) {
      throw new CommandError(
        5858203,
        `error during $documents stage: an array is expected, found: ${typeName(v)}`,
      );
    }
    for (const d of v) {
      if (!isDocument(d))
        throw new CommandError(
          5858203,
          `error during $documents stage: an array of documents is expected, found element of type: ${typeName(d)}`,
        );
      yield d;
    }
  };
};
