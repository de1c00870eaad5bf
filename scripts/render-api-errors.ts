/** Rewrites the API error table in README.md from libs/contracts (run: npm run docs:errors). */
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { renderApiErrorTable } from '@sync/contracts';

const START = '<!-- api-errors:start -->';
const END = '<!-- api-errors:end -->';
const readme = resolve(__dirname, '../../README.md');
const text = readFileSync(readme, 'utf8');
const before = text.slice(0, text.indexOf(START) + START.length);
const after = text.slice(text.indexOf(END));
writeFileSync(readme, `${before}\n${renderApiErrorTable()}\n${after}`);
