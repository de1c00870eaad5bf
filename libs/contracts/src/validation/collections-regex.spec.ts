import { compileCollectionsRegex } from './collections-regex';
import { stripExtendedSyntax } from './safe-regex';

describe('compileCollectionsRegex', () => {
  it('maps i, m and s to the JavaScript flags of the same meaning', () => {
    expect(compileCollectionsRegex({ pattern: '^orders$', options: 'i' }).test('ORDERS')).toBe(
      true,
    );
    expect(compileCollectionsRegex({ pattern: 'a.b', options: 's' }).test('a\nb')).toBe(true);
    expect(compileCollectionsRegex({ pattern: '^b', options: 'm' }).test('a\nb')).toBe(true);
  });

  it('honours x by dropping whitespace and comments, like PCRE extended mode', () => {
    const regex = compileCollectionsRegex({
      pattern: '^ app _ \\d+  # numbered apps\n $',
      options: 'x',
    });
    expect(regex.test('app_12')).toBe(true);
    expect(regex.test('app _12')).toBe(false);
  });

  it.each([
    ['keeps escaped whitespace', 'a\\ b', 'a\\ b'],
    ['keeps whitespace and # inside a class', '[ #] x', '[ #]x'],
    ['drops a trailing comment', 'a#comment', 'a'],
    ['keeps an escaped #', 'a\\#b', 'a\\#b'],
  ])('stripExtendedSyntax %s', (_name, input, output) => {
    expect(stripExtendedSyntax(input)).toBe(output);
  });
});
