import type { Document } from 'bson';
import { compareStrings, compareValues, type StringComparator } from '../bson/compare';
import { CommandError } from '../errors';
import { COLLATION_VARIANTS, SUPPORTED_LOCALES, canonicalCase } from '../collation/locales';
import { formatDocument } from './format';

/** Orders any two BSON values, honouring a collation for strings. */
export type ValueComparator = (a: unknown, b: unknown) => number;

/** ICU version of MongoDB 7.0's vendored ICU, reported as a collation's `version`. */
export const ICU_VERSION = '57.1';

/** A validated, non-simple collation with every option resolved (mongod's CollationSpec). */
export interface ResolvedCollation {
  locale: string;
  caseLevel: boolean;
  caseFirst: 'upper' | 'lower' | 'off';
  strength: 1 | 2 | 3 | 4 | 5;
  numericOrdering: boolean;
  alternate: 'non-ignorable' | 'shifted';
  maxVariable: 'punct' | 'space';
  normalization: boolean;
  backwards: boolean;
  version: string;
}

/** Locales whose ICU tailoring turns on backwards secondary ordering (`[backwards 2]`). */
const BACKWARDS_BY_DEFAULT = new Set(['fr_CA']);

function boolField(spec: Document, name: string): boolean | undefined {
  const v = spec[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'boolean') {
    throw new CommandError(
      'TypeMismatch',
      `"${name}" had the wrong type. Expected bool, found ${typeName(v)}`,
    );
  }
  return v;
}

function stringField(spec: Document, name: string): string | undefined {
  const v = spec[name];
  if (v === undefined) return undefined;
  if (typeof v !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      `"${name}" had the wrong type. Expected string, found ${typeName(v)}`,
    );
  }
  return v;
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'double';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'string') return 'string';
  if (Array.isArray(v)) return 'array';
  const tag = (v as { _bsontype?: string })._bsontype;
  if (tag === 'Long') return 'long';
  if (tag === 'Double') return 'double';
  if (tag === 'Int32') return 'int';
  if (tag === 'Decimal128') return 'decimal';
  return 'object';
}

function numberValue(v: unknown): number | undefined {
  if (typeof v === 'number') return v;
  const tag = (v as { _bsontype?: string } | null)?._bsontype;
  if (tag === 'Long' || tag === 'Int32' || tag === 'Double')
    return Number((v as { valueOf(): unknown }).valueOf());
  return undefined;
}

/** The locale part (before `@`) and the ICU `collation=` keyword of a locale ID. */
function splitLocale(id: string): { base: string; variant?: string; badKeywords: boolean } {
  const at = id.indexOf('@');
  if (at < 0) return { base: id, badKeywords: false };
  const base = id.slice(0, at);
  const m = /^collation=([a-z0-9]+)$/.exec(id.slice(at + 1));
  if (!m) return { base, badKeywords: true };
  return { base, variant: m[1], badKeywords: false };
}

function isSupportedLocaleId(id: string): boolean {
  const { base, variant, badKeywords } = splitLocale(id);
  if (badKeywords || !SUPPORTED_LOCALES.has(base)) return false;
  return variant === undefined || COLLATION_VARIANTS.has(variant);
}

/** The locale ICU would have used instead of an unsupported one (mongod's "Did you mean"). */
function suggestionFor(id: string): string | undefined {
  const canon = canonicalCase(id);
  if (canon !== id && isSupportedLocaleId(canon)) return canon;
  const parts = splitLocale(canon).base.split('_');
  while (parts.length > 1) {
    parts.pop();
    const candidate = parts.join('_');
    if (SUPPORTED_LOCALES.has(candidate)) return candidate;
  }
  const base = splitLocale(canon).base;
  if (base !== id && SUPPORTED_LOCALES.has(base) && base !== 'root') return base;
  return undefined;
}

const KNOWN_FIELDS = new Set([
  'locale',
  'caseLevel',
  'caseFirst',
  'strength',
  'numericOrdering',
  'alternate',
  'maxVariable',
  'normalization',
  'backwards',
  'version',
]);

/**
 * Validates a collation spec like mongod's CollatorFactoryICU::makeFromBSON and returns it
 * with every option resolved; undefined for the simple (binary) collation. Errors carry
 * mongod's codes and messages (collator_factory_icu.cpp).
 */
export function parseCollation(spec: Document | undefined): ResolvedCollation | undefined {
  if (!spec) return undefined;
  const locale = spec.locale;
  if (locale === undefined) {
    throw new CommandError(40414 as number, "BSON field 'locale' is missing but a required field");
  }
  if (typeof locale !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      `"locale" had the wrong type. Expected string, found ${typeName(locale)}`,
    );
  }
  const shown = formatDocument(spec);
  if (locale.includes('\0')) {
    throw new CommandError(
      'BadValue',
      `Field 'locale' cannot contain null byte. Collation spec: ${shown}`,
    );
  }
  if (locale === 'simple') {
    if (Object.keys(spec).length > 1) {
      throw new CommandError(
        'FailedToParse',
        `If locale=simple, no other fields should be present in: ${shown}`,
      );
    }
    return undefined;
  }
  if (locale === '') {
    throw new CommandError('BadValue', `Field 'locale' cannot be the empty string in: ${shown}`);
  }
  if (!isSupportedLocaleId(locale)) {
    const suggestion = suggestionFor(locale);
    throw new CommandError(
      'BadValue',
      `Field 'locale' is invalid in: ${shown}` +
        (suggestion ? `. Did you mean '${suggestion}'?` : ''),
    );
  }
  const caseLevel = boolField(spec, 'caseLevel') ?? false;
  const caseFirstRaw = stringField(spec, 'caseFirst') ?? 'off';
  if (caseFirstRaw !== 'upper' && caseFirstRaw !== 'lower' && caseFirstRaw !== 'off') {
    throw new CommandError(
      'FailedToParse',
      `Field 'caseFirst' must be 'upper', 'lower', or 'off'. Got: ${caseFirstRaw}`,
    );
  }
  let strength = 3;
  if (spec.strength !== undefined) {
    const n = numberValue(spec.strength);
    if (n === undefined || !Number.isInteger(n)) {
      throw new CommandError(
        'TypeMismatch',
        `"strength" had the wrong type. Expected number, found ${typeName(spec.strength)}`,
      );
    }
    if (n < 1 || n > 5) {
      throw new CommandError(
        'FailedToParse',
        `Field 'strength' must be an integer 1 through 5. Got: ${n}`,
      );
    }
    strength = n;
  }
  const numericOrdering = boolField(spec, 'numericOrdering') ?? false;
  const alternate = stringField(spec, 'alternate') ?? 'non-ignorable';
  if (alternate !== 'non-ignorable' && alternate !== 'shifted') {
    throw new CommandError(
      'FailedToParse',
      `Field 'alternate' must be 'non-ignorable' or 'shifted'. Got: ${alternate}`,
    );
  }
  const maxVariable = stringField(spec, 'maxVariable') ?? 'punct';
  if (maxVariable !== 'punct' && maxVariable !== 'space') {
    throw new CommandError(
      'FailedToParse',
      `Field 'maxVariable' must be 'punct' or 'space'. Got: ${maxVariable}`,
    );
  }
  const normalization = boolField(spec, 'normalization') ?? false;
  const base = splitLocale(locale).base;
  const backwards = boolField(spec, 'backwards') ?? BACKWARDS_BY_DEFAULT.has(base);
  const version = stringField(spec, 'version');
  if (version !== undefined && version !== ICU_VERSION) {
    const err = new CommandError(
      222 as number,
      `Requested collation version ${version} but the only available collator version was ${ICU_VERSION}. Requested collation spec: ${shown}`,
    );
    // errors.ts has no name for 222; set mongod's.
    throw Object.assign(err, { codeName: 'IncompatibleCollationVersion' });
  }
  for (const key of Object.keys(spec)) {
    if (!KNOWN_FIELDS.has(key)) {
      throw new CommandError(
        'FailedToParse',
        `Collation spec contains unknown field. Collation spec: ${shown}`,
      );
    }
  }
  const resolved: ResolvedCollation = {
    locale,
    caseLevel,
    caseFirst: caseFirstRaw,
    strength: strength as ResolvedCollation['strength'],
    numericOrdering,
    alternate,
    maxVariable,
    normalization,
    backwards,
    version: ICU_VERSION,
  };
  if (backwards && strength === 1) {
    throw new CommandError(
      'BadValue',
      `'backwards' is invalid with 'strength' of 1 in: ${formatDocument({ ...resolved })}`,
    );
  }
  if (caseFirstRaw !== 'off' && !caseLevel && strength < 3) {
    throw new CommandError(
      'BadValue',
      `'caseFirst' is invalid unless 'caseLevel' is on or 'strength' is greater than 2 in: ${formatDocument({ ...resolved })}`,
    );
  }
  return resolved;
}

/** The BCP 47 tag Intl.Collator needs for an ICU locale ID (`en_US_POSIX@collation=x`). */
function bcp47(locale: string, forceNoBackwards: boolean): string {
  const { base, variant } = splitLocale(locale);
  let tag: string;
  if (base === 'root') tag = 'und';
  else if (base === 'en_US_POSIX') tag = 'en-US-u-va-posix';
  else if (forceNoBackwards && base === 'fr_CA') tag = 'fr';
  else tag = base.replace(/_/g, '-');
  if (variant) {
    const co = COLLATION_VARIANTS.get(variant) ?? 'standard';
    tag += tag.includes('-u-') ? `-co-${co}` : `-u-co-${co}`;
  }
  return tag;
}

const WHITESPACE = /[\s\u0085]/gu;

function buildComparator(c: ResolvedCollation): StringComparator {
  const sensitivity =
    c.strength === 1
      ? c.caseLevel
        ? 'case'
        : 'base'
      : c.strength === 2
        ? c.caseLevel
          ? 'variant'
          : 'accent'
        : 'variant';
  const base = splitLocale(c.locale).base;
  const defaultBackwards = BACKWARDS_BY_DEFAULT.has(base);
  const tag = bcp47(c.locale, defaultBackwards && !c.backwards);
  const options: Intl.CollatorOptions = {
    usage: 'sort',
    sensitivity,
    numeric: c.numericOrdering,
    caseFirst: c.caseFirst === 'off' ? 'false' : c.caseFirst,
  };
  const shifted = c.alternate === 'shifted';
  // alternate: shifted makes variable characters ignorable below the quaternary level:
  // whitespace and punctuation (maxVariable punct, Intl's ignorePunctuation) or whitespace
  // only (maxVariable space, done by removing it first).
  const main = new Intl.Collator(tag, {
    ...options,
    ignorePunctuation: shifted && c.maxVariable === 'punct',
  });
  const prep =
    shifted && c.maxVariable === 'space' ? (s: string) => s.replace(WHITESPACE, '') : undefined;
  const plain = shifted ? new Intl.Collator(tag, options) : undefined;
  // backwards: secondary (accent) differences are weighed from the end of the string.
  const emulateBackwards = c.backwards && !defaultBackwards && c.strength >= 2;
  const primary = emulateBackwards
    ? new Intl.Collator(tag, { ...options, sensitivity: 'base' })
    : undefined;
  const secondary = emulateBackwards
    ? new Intl.Collator(tag, { ...options, sensitivity: 'accent' })
    : undefined;
  const reverse = (s: string) => [...s.normalize('NFC')].reverse().join('');
  return (a, b) => {
    const x = prep ? prep(a) : a;
    const y = prep ? prep(b) : b;
    let r: number;
    if (primary && secondary) {
      r = primary.compare(x, y);
      if (r === 0) r = secondary.compare(reverse(x), reverse(y));
      if (r === 0) r = main.compare(x, y);
    } else {
      r = main.compare(x, y);
    }
    // Quaternary: shifted characters break ties; identical: code points break ties.
    if (r === 0 && c.strength >= 4 && plain) r = plain.compare(a, b);
    if (r === 0 && c.strength === 5) r = compareStrings(a.normalize('NFD'), b.normalize('NFD'));
    return r < 0 ? -1 : r > 0 ? 1 : 0;
  };
}

const comparatorCache = new Map<string, StringComparator>();
/** Per spec object: a collation document is parsed once however often it is used. */
const bySpec = new WeakMap<Document, StringComparator>();

/**
 * Builds the string order of a collation with ICU (Intl.Collator; Node ships full ICU).
 * Locale IDs are MongoDB's (ICU: `en_US`, `de@collation=phonebook`). strength, caseLevel,
 * caseFirst and numericOrdering map onto Intl options; alternate/maxVariable, backwards and
 * strengths 4-5 are emulated on top (see buildComparator). normalization has no effect.
 */
export function stringComparatorFor(collation?: Document): StringComparator {
  if (!collation || collation.locale === 'simple') {
    if (collation && Object.keys(collation).length > 1) parseCollation(collation);
    return compareStrings;
  }
  const known = bySpec.get(collation);
  if (known) return known;
  const resolved = parseCollation(collation);
  if (!resolved) return compareStrings;
  const key = JSON.stringify(resolved);
  let cmp = comparatorCache.get(key);
  if (!cmp) {
    cmp = buildComparator(resolved);
    if (comparatorCache.size > 1000) comparatorCache.clear();
    comparatorCache.set(key, cmp);
  }
  bySpec.set(collation, cmp);
  return cmp;
}

/** A total order over BSON values under an optional collation. */
export function valueComparatorFor(collation?: Document): ValueComparator {
  const strCmp = stringComparatorFor(collation);
  if (strCmp === compareStrings) return compareValues;
  return (a, b) => compareValues(a, b, strCmp);
}
