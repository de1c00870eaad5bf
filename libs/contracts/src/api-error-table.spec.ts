import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_ERROR_TABLE_END, API_ERROR_TABLE_START, renderApiErrorTable } from './api-error-table';
import { API_ERRORS } from './api-errors';

describe('API error table', () => {
  it('has one row per error with its status', () => {
    const table = renderApiErrorTable();
    for (const [name, { httpStatus }] of Object.entries(API_ERRORS)) {
      expect(table).toContain(`| \`${name}\` | ${httpStatus} |`);
    }
    expect(table.split('\n')).toHaveLength(Object.keys(API_ERRORS).length + 2);
  });

  it('uses only the statuses the API promises', () => {
    const statuses = new Set(Object.values(API_ERRORS).map((entry) => entry.httpStatus));
    expect([...statuses].sort()).toEqual([400, 401, 404, 409, 413, 415, 500, 503]);
  });

  // The README documents the errors; this keeps it generated from API_ERRORS, never hand-edited.
  it('matches the table in README.md between the api-errors markers', () => {
    const readmePath = join(__dirname, '..', '..', '..', 'README.md');
    const readme = existsSync(readmePath) ? readFileSync(readmePath, 'utf8') : '';
    const start = readme.indexOf(API_ERROR_TABLE_START);
    const end = readme.indexOf(API_ERROR_TABLE_END);
    const hint = `README.md must contain, between ${API_ERROR_TABLE_START} and ${API_ERROR_TABLE_END}:\n${renderApiErrorTable()}`;
    if (start < 0 || end < start) throw new Error(hint);
    expect(readme.slice(start + API_ERROR_TABLE_START.length, end).trim()).toBe(
      renderApiErrorTable(),
    );
  });
});
