import type { CollectionsRegex } from '../start-request';
import { compileSafeRegex, MAX_PATTERN_LENGTH, UnsafeRegexError } from './safe-regex';

/**
 * `collectionsRegex` uses MongoDB's option letters (i, m, s, x). JavaScript has i, m and s with
 * the same meaning but no x (PCRE "extended": unescaped whitespace and `#` comments outside a
 * character class are ignored). Rejecting x would refuse filters users copy from MongoDB, so x is
 * honoured by stripping that whitespace and those comments before compiling. Validation and the
 * engine both compile through `compileCollectionsRegex`, so "valid" means "the engine can run it".
 */
export const REGEX_OPTION_LETTERS = ['i', 'm', 's', 'x'] as const;

/** Long enough for any real filter, short enough that matching stays cheap. */
export const MAX_REGEX_PATTERN_LENGTH = MAX_PATTERN_LENGTH;

export function compileCollectionsRegex(regex: CollectionsRegex): RegExp {
  return compileSafeRegex(regex.pattern, regex.options ?? '');
}

/** Why `regex` cannot be used, or null. Field paths are added by the caller. */
export function collectionsRegexOptionsProblem(options: string): string | null {
  for (const [index, letter] of [...options].entries()) {
    if (!(REGEX_OPTION_LETTERS as readonly string[]).includes(letter)) {
      return `has unsupported option "${letter}"; MongoDB accepts only ${REGEX_OPTION_LETTERS.join(', ')}`;
    }
    if (options.indexOf(letter) !== index) return `repeats option "${letter}"`;
  }
  return null;
}

export function collectionsRegexPatternProblem(pattern: string, options = ''): string | null {
  if (pattern.length === 0) return 'must not be empty';
  // A user's pattern must not be able to hang the service; the same checker the
  // engine compiles with decides, so a pattern accepted here always runs.
  try {
    compileSafeRegex(pattern, options.replace(/[^imsx]/g, ''));
    return null;
  } catch (error) {
    if (error instanceof UnsafeRegexError) return error.reason;
    throw error;
  }
}
