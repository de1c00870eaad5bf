/**
 * The Redis URL (`--redis`) carries a password like a MongoDB connection string does, and gets
 * the same treatment: a shape check that never echoes the value, a redacted form for logs and
 * errors, and the literal secrets a logger scrubs.
 */
const REDIS_SCHEME = /^(rediss?:\/\/)([\s\S]*)$/i;
export const REDIS_URL_IN_TEXT = /rediss?:\/\/[^\s"'`<>]*/gi;

export function redisUrlProblem(url: string): string | null {
  const match = REDIS_SCHEME.exec(url);
  if (!match) return 'must start with redis:// or rediss://';
  if (/\s/.test(match[2])) return 'must not contain whitespace';
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return 'is not a valid URL (percent-encode @ : / ? # in the user name and password)';
  }
  if (parsed.hostname === '') return 'names no host';
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d{1,2}$/.test(db)) return 'must name a database number (/0 to /15) or none';
  return null;
}

/** `redis://user:pw@h:6379/0` → `redis://<credentials>@h:6379/0`. */
export function redactRedisUrl(url: string): string {
  const match = REDIS_SCHEME.exec(url.trim());
  if (!match) return '<redacted redis url>';
  const [, scheme, tail] = match;
  const at = tail.lastIndexOf('@');
  return at < 0 ? `${scheme}${tail}` : `${scheme}<credentials>@${tail.slice(at + 1)}`;
}

/** The password (raw and decoded) of a Redis URL, for a logger's scrub list. */
export function redisUrlSecrets(url: string): string[] {
  const match = REDIS_SCHEME.exec(url.trim());
  if (!match) return [];
  const at = match[2].lastIndexOf('@');
  if (at < 0) return [];
  const userInfo = match[2].slice(0, at);
  const colon = userInfo.indexOf(':');
  const password = colon >= 0 ? userInfo.slice(colon + 1) : userInfo;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {
    // keep the raw form only
  }
  return [...new Set([password, decoded])].filter((secret) => secret.length >= 3);
}
