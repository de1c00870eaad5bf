import { API_ERRORS, type ApiErrorName } from './api-errors';

/** Markers around the generated table in README.md (a unit test compares the two). */
export const API_ERROR_TABLE_START = '<!-- api-errors:start -->';
export const API_ERROR_TABLE_END = '<!-- api-errors:end -->';

/** The README's error table, generated so the docs cannot drift from `API_ERRORS`. */
export function renderApiErrorTable(): string {
  const rows = (Object.keys(API_ERRORS) as ApiErrorName[]).map((name) => {
    const { httpStatus, description } = API_ERRORS[name];
    return `| \`${name}\` | ${httpStatus} | ${description.replace(/\|/g, '\\|')} |`;
  });
  return ['| Error | HTTP status | Meaning |', '|---|---|---|', ...rows].join('\n');
}
