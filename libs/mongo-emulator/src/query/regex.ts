import type { BSONRegExp } from 'bson';
import { CommandError } from '../errors';

const VALID_FLAGS = new Set(['i', 'm', 's', 'x', 'u']);

/**
 * Compiles a MongoDB (PCRE) pattern and option letters to a JS RegExp. `x` (extended) is
 * emulated by stripping unescaped whitespace and `#` comments outside character classes;
 * `u` is accepted and ignored since MongoDB always matches in UTF-8 mode. PCRE-only syntax
 * (possessive quantifiers, \A \Z, inline (?i) groups) is a gap.
 */
export function compileRegex(pattern: string, options: string): RegExp {
  for (const flag of options) {
    if (!VALID_FLAGS.has(flag)) {
      throw new CommandError(51108, `invalid flag in regex options: ${flag}`);
    }
  }
  const source = options.includes('x') ? stripExtended(pattern) : pattern;
  let flags = '';
  if (options.includes('i')) flags += 'i';
  if (options.includes('m')) flags += 'm';
  if (options.includes('s')) flags += 's';
  try {
    return new RegExp(source, flags);
  } catch (err) {
    throw new CommandError(51091, `Regular expression is invalid: ${(err as Error).message}`);
  }
}

function stripExtended(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const ch = pattern[i];
    if (ch === '\\') {
      out += ch + (pattern[i + 1] ?? '');
      i++;
    } else if (inClass) {
      if (ch === ']') inClass = false;
      out += ch;
    } else if (ch === '[') {
      inClass = true;
      out += ch;
    } else if (ch === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i++;
    } else if (!/\s/.test(ch)) {
      out += ch;
    }
  }
  return out;
}

/** The pattern and options of a regex value, whether a BSONRegExp or a native RegExp. */
export function regexParts(value: RegExp | BSONRegExp): { pattern: string; options: string } {
  if (value instanceof RegExp) {
    // Translate JS flag letters that MongoDB knows; 'g' and 'y' have no meaning in a query.
    const options = [...value.flags].filter((f) => 'imsu'.includes(f)).join('');
    return { pattern: value.source, options };
  }
  return { pattern: value.pattern, options: value.options };
}

export function isRegexValue(value: unknown): value is RegExp | BSONRegExp {
  return (
    value instanceof RegExp || (value as { _bsontype?: string } | null)?._bsontype === 'BSONRegExp'
  );
}
