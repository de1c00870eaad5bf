import { ApiError } from '../api-error';

/** JSON bodies must be objects; arrays, strings and null are rejected before any field check. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * `__proto__` survives JSON.parse as an own key but vanishes (or rewrites the prototype) when
 * copied onto a class instance, and class-validator's whitelist mistakes keys such as
 * `constructor` or `toString` for known fields (it looks them up in a plain object). No request
 * field has such a name, so they are rejected up front.
 */
export function assertNoPrototypeKeys(value: unknown, path = ''): void {
  if (typeof value !== 'object' || value === null) return;
  for (const key of Object.keys(value)) {
    const child = Array.isArray(value) ? `${path}[${key}]` : path === '' ? key : `${path}.${key}`;
    if (key === '__proto__' || key in Object.prototype) {
      throw new ApiError(
        'InvalidRequest',
        `unknown field "${key}"${path === '' ? '' : ` in ${path}`}`,
      );
    }
    assertNoPrototypeKeys((value as Record<string, unknown>)[key], child);
  }
}
