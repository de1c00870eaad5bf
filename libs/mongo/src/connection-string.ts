import { redactSecrets, uriSecrets } from '@sync/contracts';

/**
 * `<host>:<port>` of the first seed host, for progress.directionMapping. Everything before the
 * LAST `@` of the authority (credentials) is dropped, so no secret can leak through it.
 */
export function displayHost(uri: string): string {
  const withoutScheme = uri.replace(/^mongodb(\+srv)?:\/\//i, '');
  const at = withoutScheme.lastIndexOf('@');
  const afterCredentials = at >= 0 ? withoutScheme.slice(at + 1) : withoutScheme;
  const hosts = afterCredentials.split(/[/?]/, 1)[0] ?? '';
  const first = decodeURIComponent(hosts.split(',')[0] ?? '');
  if (first === '') return 'unknown:27017';
  if (first.startsWith('[')) return first.includes(']:') ? first : `${first}:27017`;
  return first.includes(':') ? first : `${first}:27017`;
}

/** Removes connection strings and the literal secrets of `uris` from a text. */
export function makeRedactor(uris: string[]): (text: string) => string {
  const secrets = uris.flatMap(uriSecrets).sort((a, b) => b.length - a.length);
  return (text) => {
    let out = redactSecrets(text);
    for (const secret of secrets) out = out.split(secret).join('<redacted>');
    return out;
  };
}
