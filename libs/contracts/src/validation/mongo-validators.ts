import { IsBoolean, ValidateBy, ValidateIf, type ValidationOptions } from 'class-validator';
import {
  collectionsRegexOptionsProblem,
  collectionsRegexPatternProblem,
} from './collections-regex';
import { collectionNameProblem, databaseNameProblem, syncableDatabaseProblem } from './mongo-names';
import { shardKeyProblem } from './shard-key';

/**
 * class-validator decorators over the pure checks, so each failure names its exact reason.
 * They run only on strings/arrays of the right type; the type decorators report the rest.
 */

type ProblemFinder = (value: unknown, object: object) => string | null;

function ValidateWith(name: string, find: ProblemFinder, options?: ValidationOptions) {
  return ValidateBy(
    {
      name,
      validator: {
        validate: (value, args) => find(value, args?.object ?? {}) === null,
        // With `each`, class-validator hands the message the whole array: name the element.
        defaultMessage: (args) => {
          const object = args?.object ?? {};
          if (!options?.each || !Array.isArray(args?.value))
            return find(args?.value, object) ?? 'is invalid';
          for (const [index, element] of args.value.entries()) {
            const problem = find(element, object);
            if (problem) return `element [${index}] ${problem}`;
          }
          return 'is invalid';
        },
      },
    },
    options,
  );
}

const ifString =
  (check: (text: string) => string | null): ProblemFinder =>
  (value) =>
    typeof value === 'string' ? check(value) : null;

/**
 * Optional, but present means valid: unlike `@IsOptional()`, `null` is NOT treated as absent,
 * because `"reversible": null` is a client bug we should report, not read as false.
 */
export function IsOptionalNotNull(): PropertyDecorator {
  return ValidateIf((_object, value) => value !== undefined);
}

export function IsDatabaseName(options?: ValidationOptions) {
  return ValidateWith('isDatabaseName', ifString(databaseNameProblem), options);
}

export function IsSyncableDatabase(options?: ValidationOptions) {
  return ValidateWith('isSyncableDatabase', ifString(syncableDatabaseProblem), options);
}

export function IsCollectionName(options?: ValidationOptions) {
  return ValidateWith('isCollectionName', ifString(collectionNameProblem), options);
}

export function IsShardKey(options?: ValidationOptions) {
  return ValidateWith('isShardKey', (value) => shardKeyProblem(value), options);
}

export function IsRegexOptions(options?: ValidationOptions) {
  return ValidateWith('isRegexOptions', ifString(collectionsRegexOptionsProblem), options);
}

/** Compiles the pattern with the sibling `options`, exactly as the engine will. */
export function IsCompilableRegex(options?: ValidationOptions) {
  return ValidateWith(
    'isCompilableRegex',
    (value, object) => {
      if (typeof value !== 'string') return null;
      const letters = (object as { options?: unknown }).options;
      // Bad option letters are reported on `options`; compile without them meanwhile.
      const usable =
        typeof letters === 'string' && collectionsRegexOptionsProblem(letters) === null
          ? letters
          : '';
      return collectionsRegexPatternProblem(value, usable);
    },
    options,
  );
}

/** A JSON boolean; the message calls out the common `"true"` string mistake explicitly. */
export function IsStrictBoolean(): PropertyDecorator {
  return IsBoolean({
    message: (args) =>
      typeof args.value === 'string'
        ? `must be a boolean (true or false), not the string ${JSON.stringify(args.value)}`
        : 'must be a boolean (true or false)',
  });
}
