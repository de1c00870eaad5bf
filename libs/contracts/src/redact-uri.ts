/**
 * Connection strings carry credentials; they must never reach a response, a log line or an error
 * text. These helpers are deliberately conservative: when in doubt they hide more.
 */

import { REDIS_URL_IN_TEXT, redactRedisUrl } from './redis-url';

const SCHEME = /^(mongodb(?:\+srv)?:\/\/)([\s\S]*)$/i;
/** Options whose values are secrets (TLS key passwords, AWS session tokens, proxy login). */
const SENSITIVE_OPTION = /password|secret|token|authmechanismproperties|proxyusername/i;
const URI_IN_TEXT = /mongodb(?:\+srv)?:\/\/[^\s"'`<>]*/gi;

export const REDACTED_CREDENTIALS = '<credentials>';

/**
 * `mongodb://user:pw@h1,h2/db?tlsCertificateKeyFilePassword=x` →
 * `mongodb://<credentials>@h1,h2/db?tlsCertificateKeyFilePassword=<redacted>`.
 * Credentials end at the LAST `@`, so an unescaped `@` or `/` in a password cannot leak a part
 * of it; anything that is not a mongodb URI is hidden entirely.
 */
export function redactUri(uri: string): string {
  const match = SCHEME.exec(uri.trim());
  if (!match) return '<redacted connection string>';
  const [, scheme, tail] = match;
  const at = tail.lastIndexOf('@');
  const credentials = at >= 0 ? `${REDACTED_CREDENTIALS}@` : '';
  return `${scheme}${credentials}${redactOptions(at >= 0 ? tail.slice(at + 1) : tail)}`;
}

/** Redacts every mongodb://, mongodb+srv://, redis:// or rediss:// URL found inside free text. */
export function redactSecrets(text: string): string {
  return text
    .replace(URI_IN_TEXT, (uri) => redactUri(uri))
    .replace(REDIS_URL_IN_TEXT, (url) => redactRedisUrl(url));
}

/**
 * The literal secrets of a connection string (password, raw and decoded, and sensitive option
 * values), so a logger can scrub them even from text that does not look like a URI, e.g. a driver
 * message quoting only the password. Very short values are skipped: scrubbing "a" everywhere
 * would destroy every log line while protecting nothing a reader could not guess.
 */
export function uriSecrets(uri: string): string[] {
  const match = SCHEME.exec(uri.trim());
  if (!match) return [];
  const tail = match[2];
  const at = tail.lastIndexOf('@');
  const secrets: string[] = [];
  if (at >= 0) {
    const userInfo = tail.slice(0, at);
    const colon = userInfo.indexOf(':');
    if (colon >= 0) secrets.push(userInfo.slice(colon + 1));
  }
  const query = tail.slice(at + 1).split('?')[1] ?? '';
  for (const pair of query.split('&')) {
    const [key, value] = splitOnce(pair, '=');
    if (value && SENSITIVE_OPTION.test(key)) secrets.push(value);
  }
  const withDecoded = secrets.flatMap((secret) => [secret, safeDecode(secret)]);
  return [...new Set(withDecoded)].filter((secret) => secret.length >= 3);
}

function redactOptions(hostsAndRest: string): string {
  const question = hostsAndRest.indexOf('?');
  if (question < 0) return hostsAndRest;
  const query = hostsAndRest
    .slice(question + 1)
    .split('&')
    .map((pair) => {
      const [key, value] = splitOnce(pair, '=');
      return value !== undefined && SENSITIVE_OPTION.test(key) ? `${key}=<redacted>` : pair;
    })
    .join('&');
  return `${hostsAndRest.slice(0, question)}?${query}`;
}

function splitOnce(text: string, separator: string): [string, string | undefined] {
  const index = text.indexOf(separator);
  return index < 0 ? [text, undefined] : [text.slice(0, index), text.slice(index + 1)];
}

function safeDecode(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
