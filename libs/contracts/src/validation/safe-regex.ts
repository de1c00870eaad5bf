/**
 * Compiles a user-supplied `collectionsRegex` so that matching can never stall the service.
 *
 * Why static analysis and not a timeout: the engine is pure (no `vm`/worker threads), and a
 * timeout only hides a hang after it costs seconds of CPU on every match. Instead we only accept
 * patterns whose backtracking is provably bounded on the subjects we match (collection names,
 * at most 255 bytes):
 *  - star height 1: no quantifier applied to a group that itself contains a quantifier or an
 *    alternation (`(a+)+`, `(a|aa)*` are the exponential cases);
 *  - at most MAX_OPEN_QUANTIFIERS unbounded quantifiers (`*`, `+`, `{n,}`, `{n,m}` with m > 16):
 *    k such quantifiers cost O(255^(k+1)) steps for an unanchored match, so k ≤ 2 keeps a match
 *    in milliseconds (k = 3 already costs seconds);
 *  - no backreferences (they make matching NP-hard);
 *  - bounded pattern length.
 * Patterns are compiled once, when the job starts.
 */
export const MAX_PATTERN_LENGTH = 1024;
export const MAX_OPEN_QUANTIFIERS = 2;
const LARGE_BOUND = 16;

export class UnsafeRegexError extends Error {
  constructor(
    pattern: string,
    /** Why the pattern is refused, phrased to follow a field name. */
    readonly reason: string,
  ) {
    super(`collectionsRegex ${JSON.stringify(pattern.slice(0, 80))} is not accepted: ${reason}`);
    this.name = 'UnsafeRegexError';
  }
}

/** MongoDB option letters → JS flags. `x` (extended) is applied by stripping whitespace/comments. */
export function compileSafeRegex(pattern: string, options = ''): RegExp {
  if (pattern.length > MAX_PATTERN_LENGTH) {
    throw new UnsafeRegexError(pattern, `must be at most ${MAX_PATTERN_LENGTH} characters`);
  }
  let flags = '';
  let extended = false;
  for (const letter of options) {
    if (letter === 'i' || letter === 'm' || letter === 's') {
      if (!flags.includes(letter)) flags += letter;
    } else if (letter === 'x') {
      extended = true;
    } else if (letter === 'u') {
      // MongoDB patterns are UTF-8 already; the JS `u` flag only tightens syntax.
    } else {
      throw new UnsafeRegexError(pattern, `has unsupported option ${JSON.stringify(letter)}`);
    }
  }
  const source = extended ? stripExtendedSyntax(pattern) : pattern;
  checkComplexity(pattern, source);
  try {
    return new RegExp(source, flags + 'u');
  } catch {
    try {
      // PCRE accepts some escapes that the JS `u` mode rejects (e.g. `\-` outside a class).
      return new RegExp(source, flags);
    } catch (error) {
      throw new UnsafeRegexError(
        pattern,
        `is not a valid regular expression (${(error as Error).message.replace(/^Invalid regular expression: /, '')})`,
      );
    }
  }
}

/** PCRE extended mode: unescaped whitespace outside classes is ignored, `#` starts a comment. */
export function stripExtendedSyntax(pattern: string): string {
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '\\') {
      out += c + (pattern[i + 1] ?? '');
      i++;
    } else if (inClass) {
      if (c === ']') inClass = false;
      out += c;
    } else if (c === '[') {
      inClass = true;
      out += c;
    } else if (c === '#') {
      while (i < pattern.length && pattern[i] !== '\n') i++;
    } else if (!/\s/.test(c)) {
      out += c;
    }
  }
  return out;
}

interface GroupFrame {
  hasQuantifier: boolean;
  hasAlternation: boolean;
}

function checkComplexity(original: string, source: string): void {
  const stack: GroupFrame[] = [{ hasQuantifier: false, hasAlternation: false }];
  let open = 0;
  // What the next quantifier would apply to: a closed group's frame, or a plain atom.
  let lastAtom: GroupFrame | 'atom' | null = null;
  for (let i = 0; i < source.length; i++) {
    const c = source[i]!;
    if (c === '\\') {
      const next = source[i + 1] ?? '';
      if (/[1-9]/.test(next) || next === 'k')
        throw new UnsafeRegexError(
          original,
          'uses a backreference, which can take exponential time to match',
        );
      i++;
      lastAtom = 'atom';
      continue;
    }
    if (c === '[') {
      i = skipClass(source, i);
      lastAtom = 'atom';
      continue;
    }
    if (c === '(') {
      stack.push({ hasQuantifier: false, hasAlternation: false });
      if (source[i + 1] === '?') i = skipGroupPrefix(source, i);
      lastAtom = null;
      continue;
    }
    if (c === ')') {
      const frame =
        stack.length > 1 ? stack.pop()! : { hasQuantifier: false, hasAlternation: false };
      const parent = stack[stack.length - 1]!;
      parent.hasQuantifier ||= frame.hasQuantifier;
      lastAtom = frame;
      continue;
    }
    if (c === '|') {
      stack[stack.length - 1]!.hasAlternation = true;
      lastAtom = null;
      continue;
    }
    const quantifier = readQuantifier(source, i);
    if (quantifier) {
      if (typeof lastAtom === 'object' && lastAtom !== null && quantifier.repeats) {
        if (lastAtom.hasQuantifier || lastAtom.hasAlternation) {
          throw new UnsafeRegexError(
            original,
            'nests unbounded quantifiers or alternations inside a repeated group (like (a+)+ or (a|aa)*), which can take exponential time; simplify it',
          );
        }
      }
      if (quantifier.open) open++;
      if (open > MAX_OPEN_QUANTIFIERS) {
        throw new UnsafeRegexError(
          original,
          `has more than ${MAX_OPEN_QUANTIFIERS} unbounded quantifiers, which can take very long to match; simplify it`,
        );
      }
      stack[stack.length - 1]!.hasQuantifier ||= quantifier.repeats;
      i = quantifier.end;
      if (source[i + 1] === '?' || source[i + 1] === '+') i++; // lazy / possessive suffix
      lastAtom = null;
      continue;
    }
    lastAtom = 'atom';
  }
}

function skipClass(source: string, start: number): number {
  let i = start + 1;
  if (source[i] === '^') i++;
  if (source[i] === ']') i++;
  for (; i < source.length; i++) {
    if (source[i] === '\\') i++;
    else if (source[i] === ']') return i;
  }
  return source.length;
}

/** Skips `(?:`, `(?=`, `(?!`, `(?<=`, `(?<!`, `(?<name>`, returning the index of its last char. */
function skipGroupPrefix(source: string, open: number): number {
  const rest = source.slice(open + 1);
  const named = /^\?<[A-Za-z_][A-Za-z0-9_]*>/.exec(rest);
  if (named) return open + named[0].length;
  const simple = /^\?(?:<=|<!|[:=!])/.exec(rest);
  if (simple) return open + simple[0].length;
  return open;
}

function readQuantifier(
  source: string,
  i: number,
): { end: number; repeats: boolean; open: boolean } | null {
  const c = source[i];
  if (c === '*' || c === '+') return { end: i, repeats: true, open: true };
  if (c === '?') return { end: i, repeats: false, open: false };
  if (c !== '{') return null;
  const m = /^\{(\d+)(,(\d*))?\}/.exec(source.slice(i));
  if (!m) return null;
  const max = m[2] === undefined ? Number(m[1]) : m[3] === '' ? Infinity : Number(m[3]);
  return { end: i + m[0].length - 1, repeats: max > 1, open: max > LARGE_BOUND };
}
