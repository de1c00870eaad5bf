import type { CollectionsRegex } from '../start-request';

/**
 * `collectionsRegex` uses MongoDB's option letters (i, m, s, x). JavaScript has i, m and s with
 * the same meaning but no x (PCRE "extended": unescaped whitespace and `#` comments outside a
 * character class are ignored). Rejecting x would refuse filters users copy from MongoDB, so x is
 * honoured by stripping that whitespace and those comments before compiling. Validation and the
 * engine both compile through `compileCollectionsRegex`, so "valid" means "the engine can run it".
 */
export const REGEX_OPTION_LETTERS = ['i', 'm', 's', 'x'] as const;

/** Long enough for any real filter, short enough that matching stays cheap. */
export const MAX_REGEX_PATTERN_LENGTH = 1024;

export function compileCollectionsRegex(regex: CollectionsRegex): RegExp {
  const options = regex.options ?? '';
  const pattern = options.includes('x') ? stripExtendedSyntax(regex.pattern) : regex.pattern;
  return new RegExp(pattern, options.replace('x', ''));
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
  if (pattern.length > MAX_REGEX_PATTERN_LENGTH)
    return `must be at most ${MAX_REGEX_PATTERN_LENGTH} characters`;
  const effective = options.includes('x') ? stripExtendedSyntax(pattern) : pattern;
  try {
    new RegExp(effective, options.replace(/[^ims]/g, ''));
  } catch (error) {
    return `is not a valid regular expression (${(error as Error).message.replace(/^Invalid regular expression: /, '')})`;
  }
  // SPEC.md §6: a user's pattern must not be able to hang the service. Nested unbounded
  // quantifiers such as (a+)+ are the classic exponential-backtracking shape.
  if (hasNestedUnboundedQuantifier(effective)) {
    return 'nests unbounded quantifiers (like (a+)+), which can take exponential time; simplify it';
  }
  return null;
}

/** PCRE extended mode: drop unescaped whitespace and `#...` comments outside character classes. */
export function stripExtendedSyntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i += 1) {
    const char = pattern[i];
    if (char === '\\') {
      out += pattern.slice(i, i + 2);
      i += 1;
    } else if (inClass) {
      out += char;
      if (char === ']') inClass = false;
    } else if (/\s/.test(char)) {
      continue;
    } else if (char === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i += 1;
    } else {
      out += char;
      if (char === '[') inClass = true;
    }
  }
  return out;
}

/** A group that contains an unbounded quantifier and is itself repeated without bound. */
function hasNestedUnboundedQuantifier(pattern: string): boolean {
  const groupHasUnbounded: boolean[] = [];
  let inClass = false;
  for (let i = 0; i < pattern.length; i += 1) {
    const char = pattern[i];
    if (char === '\\') {
      i += 1;
    } else if (inClass) {
      if (char === ']') inClass = false;
    } else if (char === '[') {
      inClass = true;
    } else if (char === '(') {
      groupHasUnbounded.push(false);
    } else if (char === ')') {
      const inner = groupHasUnbounded.pop() ?? false;
      const repeated = isUnboundedQuantifierAt(pattern, i + 1);
      if (inner && repeated) return true;
      if (inner || repeated) markEnclosing(groupHasUnbounded);
    } else if (isUnboundedQuantifierAt(pattern, i)) {
      markEnclosing(groupHasUnbounded);
    }
  }
  return false;
}

function isUnboundedQuantifierAt(pattern: string, index: number): boolean {
  const char = pattern[index];
  return char === '*' || char === '+' || (char === '{' && /^\{\d+,\}/.test(pattern.slice(index)));
}

function markEnclosing(stack: boolean[]): void {
  if (stack.length > 0) stack[stack.length - 1] = true;
}
