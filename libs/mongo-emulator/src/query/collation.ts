import type { Document } from 'bson';
import { compareStrings, compareValues, type StringComparator } from '../bson/compare';
import { CommandError } from '../errors';

/** Orders any two BSON values, honouring a collation for strings. */
export type ValueComparator = (a: unknown, b: unknown) => number;

/**
 * Builds the string order of a collation with ICU (via Intl.Collator, which Node ships with
 * full ICU). Supported: locale, strength 1-3 (1 ignores case and diacritics, 2 ignores case),
 * caseLevel, caseFirst, numericOrdering. Not supported (gaps): alternate/maxVariable
 * (punctuation shifting), backwards (French secondary order), normalization, strength 4-5
 * (treated as 3).
 */
export function stringComparatorFor(collation?: Document): StringComparator {
  if (!collation || collation.locale === undefined || collation.locale === 'simple') {
    return compareStrings;
  }
  if (typeof collation.locale !== 'string') {
    throw new CommandError(
      'TypeMismatch',
      "BSON field 'locale' is the wrong type, expected type 'string'",
    );
  }
  const strength = collation.strength === undefined ? 3 : Number(collation.strength);
  if (!Number.isInteger(strength) || strength < 1 || strength > 5) {
    throw new CommandError('BadValue', `strength must be an integer 1 through 5. Got: ${strength}`);
  }
  const sensitivity =
    strength === 1
      ? collation.caseLevel
        ? 'case'
        : 'base'
      : strength === 2
        ? collation.caseLevel
          ? 'variant'
          : 'accent'
        : 'variant';
  const caseFirst = collation.caseFirst === 'upper' || collation.caseFirst === 'lower';
  const collator = new Intl.Collator(collation.locale.replace(/@.*$/, ''), {
    sensitivity,
    numeric: collation.numericOrdering === true,
    caseFirst: caseFirst ? (collation.caseFirst as 'upper' | 'lower') : 'false',
    usage: 'sort',
  });
  return (a, b) => {
    const c = collator.compare(a, b);
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  };
}

/** A total order over BSON values under an optional collation. */
export function valueComparatorFor(collation?: Document): ValueComparator {
  const strCmp = stringComparatorFor(collation);
  if (strCmp === compareStrings) return compareValues;
  return (a, b) => compareValues(a, b, strCmp);
}
