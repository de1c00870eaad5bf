import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}

/** Self-time shares of the hottest functions in each `.cpuprofile` under `dir`. */
export function summariseProfiles(dir: string, top = 12): string[] {
  const lines: string[] = [];
  let files: string[];
  try {
    files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  } catch {
    return [`no profiles in ${dir}`];
  }
  for (const file of files.sort()) {
    let nodes: ProfileNode[];
    try {
      nodes = (JSON.parse(readFileSync(join(dir, file), 'utf8')) as { nodes: ProfileNode[] }).nodes;
    } catch {
      lines.push(`${file}: unreadable`);
      continue;
    }
    const byFunction = new Map<string, number>();
    const byFile = new Map<string, number>();
    const byGroup = new Map<string, number>();
    let total = 0;
    for (const node of nodes) {
      const hits = node.hitCount ?? 0;
      total += hits;
      const { functionName, url, lineNumber } = node.callFrame;
      const group = groupOf(functionName, url);
      byGroup.set(group, (byGroup.get(group) ?? 0) + hits);
      const where = url ? `${shorten(url)}:${lineNumber + 1}` : '';
      const key = `${functionName || '(anonymous)'} ${where}`.trim();
      byFunction.set(key, (byFunction.get(key) ?? 0) + hits);
      const file = url ? shorten(url) : functionName || '(native)';
      byFile.set(file, (byFile.get(file) ?? 0) + hits);
    }
    const idle = (byFunction.get('(idle)') ?? 0) + (byFunction.get('(program)') ?? 0);
    lines.push(`${file}: ${total} samples, ${pct(idle, total)} idle/program`);
    const hottest = [...byFunction]
      .filter(([k]) => k !== '(idle)' && k !== '(program)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, top);
    for (const [name, hits] of hottest) lines.push(`  ${pct(hits, total).padStart(6)}  ${name}`);
    const files = [...byFile]
      .filter(([k]) => k !== '(idle)' && k !== '(program)')
      .sort((a, b) => b[1] - a[1])
      .slice(0, Math.ceil(top / 2));
    lines.push(`  by file: ${files.map(([f, h]) => `${f} ${pct(h, total)}`).join(', ')}`);
    const busy = total - (byGroup.get('idle') ?? 0);
    const groups = [...byGroup]
      .filter(([g]) => g !== 'idle')
      .sort((a, b) => b[1] - a[1])
      .map(([g, h]) => `${g} ${pct(h, busy)}`);
    lines.push(`  busy ${pct(busy, total)}, of it: ${groups.join(', ')}`);
  }
  return lines;
}

/**
 * Where a sample's self time goes, coarsely: BSON encode/decode, the driver, change application
 * (engine apply/), the rest of the engine, the adapters, the emulator, GC, Node's own code.
 */
export function groupOf(functionName: string, url: string): string {
  if (functionName === '(idle)') return 'idle';
  if (functionName === '(garbage collector)') return 'GC';
  if (functionName === '(program)') return 'program';
  if (url.includes('node_modules/bson/')) return 'BSON';
  if (url.includes('node_modules/mongodb/')) return 'driver';
  if (url.includes('/libs/engine/src/apply/')) return 'engine apply';
  if (url.includes('/libs/engine/')) return 'engine other';
  if (url.includes('/libs/mongo-emulator/')) return 'emulator';
  if (url.includes('/libs/mongo/')) return 'adapters';
  if (url.includes('node_modules/')) return 'other packages';
  if (url === '' || url.startsWith('node:')) return 'node/native';
  return 'app';
}

function shorten(url: string): string {
  const marker = url.indexOf('/dist/');
  if (marker >= 0) return url.slice(marker + 6);
  const nm = url.lastIndexOf('node_modules/');
  return nm >= 0 ? url.slice(nm + 13) : basename(url);
}

const pct = (part: number, total: number): string =>
  total > 0 ? `${((100 * part) / total).toFixed(1)}%` : '-';
